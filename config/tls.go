package config

import (
	"crypto/tls"
	"crypto/x509"
	"os"

	"github.com/robot-agent/robot-agent/config/field"
)

// TLSConfig builds the client TLS configuration from gateway.tls: nil when
// nothing is set (system roots, the URL's host). It reads the files, so
// every unreadable or malformed one is reported, each as a *field.Error.
func (g Gateway) TLSConfig() (*tls.Config, error) {
	t := g.TLS
	if t.IsZero() {
		return nil, nil
	}
	var errs field.List
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		switch {
		case err != nil:
			errs = append(errs, &field.Error{Path: "gateway.tls.ca_file", Value: field.Format(t.CAFile), Problem: "cannot read: " + unwrapPathError(err), Hint: "check the path and that the service user may read it"})
		default:
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs.Add("gateway.tls.ca_file", t.CAFile, "no PEM certificate in the file", "give the CA certificate in PEM (BEGIN CERTIFICATE)")
			}
			cfg.RootCAs = pool
		}
	}
	if t.CertFile != "" && t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			errs.Add("gateway.tls.cert_file", t.CertFile, "cannot load the client certificate with gateway.tls.key_file: "+unwrapPathError(err), "give a PEM certificate and its matching PEM key")
		} else {
			cfg.Certificates = []tls.Certificate{cert}
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}
