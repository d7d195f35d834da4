package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testPKI is a private CA with a gateway certificate (for 127.0.0.1 and
// gw.test) and a robot client certificate, generated per test.
type testPKI struct {
	dir                                        string
	caFile, gwCert, gwKey, robotCert, robotKey string
	otherCA                                    string // a CA that signed nothing here
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	p := testPKI{dir: dir}
	serial := int64(1)
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "EC PRIVATE KEY", der)
	}
	mkCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
		k := newKey()
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, k, write(name+".pem", "CERTIFICATE", der)
	}
	ca, caKey, caFile := mkCA("robot-agent test CA")
	p.caFile = caFile
	_, _, p.otherCA = mkCA("unrelated CA")
	leaf := func(name string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (string, string) {
		k := newKey()
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: dns}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), writeKey(name+".key", k)
	}
	p.gwCert, p.gwKey = leaf("gateway", x509.ExtKeyUsageServerAuth, nil, []string{"gw.test"})
	p.robotCert, p.robotKey = leaf("robot", x509.ExtKeyUsageClientAuth, nil, nil)
	return p
}

// startGatewayProcess runs `robot-agent gateway args` as a child process
// and returns the URL it prints once listening.
func startGatewayProcess(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"gateway", "--listen", "127.0.0.1:0", "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), "ROBOT_AGENT_TEST_MAIN=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer // shown only if the test fails
	cmd.Stderr = &logs
	if err := cmd.Start(); errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot run the test binary as a child process here (qemu-user without binfmt): %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if t.Failed() {
			t.Logf("gateway %v log:\n%s", args, logs.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("gateway printed no URL: %v", err)
	}
	return strings.TrimSpace(line)
}

// runAgentAgainst runs the simulated robot for d against url with the
// gateway section yamlGateway and returns the exit status and summary.
func runAgentAgainst(t *testing.T, url, yamlGateway string, d time.Duration) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	y := "gateway:\n  url: " + url + "\n" + yamlGateway
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return runCLI("run", "--sim", "--config", cfg, "--duration", d.String(), "--log-level", "warn", "--speaker-wav", filepath.Join(dir, "p.wav"))
}

// TestWSSPrivateCAAndMTLS: the agent reaches a wss:// gateway whose
// certificate a private CA signed, with gateway.tls.ca_file and
// server_name, and one that requires a client certificate (mutual TLS);
// without the CA, with the wrong CA or without a client certificate it
// does not.
func TestWSSPrivateCAAndMTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs several sessions")
	}
	pki := newTestPKI(t)
	// The certificate names gw.test only: connecting by IP needs server_name.
	url := startGatewayProcess(t, "--tls-cert", pki.gwCert, "--tls-key", pki.gwKey)
	if !strings.HasPrefix(url, "wss://127.0.0.1:") || strings.HasSuffix(url, ":0/v1/robot") {
		t.Fatalf("gateway URL %q: want wss:// with the real port", url)
	}
	tlsYAML := func(ca string, client bool) string {
		s := "  tls:\n    ca_file: " + ca + "\n    server_name: gw.test\n"
		if client {
			s += "    cert_file: " + pki.robotCert + "\n    key_file: " + pki.robotKey + "\n"
		}
		return s
	}
	sessions := func(summary string) string {
		for _, l := range strings.Split(summary, "\n") {
			if strings.Contains(l, "uplink:") {
				return l
			}
		}
		return "(no uplink line)"
	}
	code, out, errs := runAgentAgainst(t, url, tlsYAML(pki.caFile, false), 2*time.Second)
	if code != 0 || !strings.Contains(out, " 1 session(s)") {
		t.Fatalf("private CA: exit %d, %s\n%s", code, sessions(out), errs)
	}
	for name, y := range map[string]string{
		"system roots": "",
		"wrong CA":     tlsYAML(pki.otherCA, false),
	} {
		code, out, _ := runAgentAgainst(t, url, y, 1500*time.Millisecond)
		if code != 0 || !strings.Contains(out, " 0 session(s)") {
			t.Errorf("%s: exit %d, %s: want no session", name, code, sessions(out))
		}
	}

	murl := startGatewayProcess(t, "--tls-cert", pki.gwCert, "--tls-key", pki.gwKey, "--client-ca", pki.caFile)
	code, out, errs = runAgentAgainst(t, murl, tlsYAML(pki.caFile, true), 2*time.Second)
	if code != 0 || !strings.Contains(out, " 1 session(s)") {
		t.Fatalf("mTLS: exit %d, %s\n%s", code, sessions(out), errs)
	}
	code, out, _ = runAgentAgainst(t, murl, tlsYAML(pki.caFile, false), 1500*time.Millisecond)
	if code != 0 || !strings.Contains(out, " 0 session(s)") {
		t.Errorf("mTLS without a client certificate: exit %d, %s: want no session", code, sessions(out))
	}
}

// TestAllowInsecureWS: a plain ws:// gateway on a non-loopback address is
// refused at start without gateway.allow_insecure_ws, and reached (with a
// warning) with it. The gateway asks for no token and the robot has none.
func TestAllowInsecureWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a session")
	}
	ip := nonLoopbackIP(t)
	url := startGatewayProcess(t, "--listen", net.JoinHostPort(ip, "0"))
	if !strings.HasPrefix(url, "ws://"+ip) {
		t.Fatalf("gateway URL %q", url)
	}
	code, _, errs := runAgentAgainst(t, url, "", time.Second)
	if code != exitConfig || !strings.Contains(errs, "gateway.allow_insecure_ws: true") {
		t.Fatalf("without allow_insecure_ws: exit %d\n%s", code, errs)
	}
	code, out, errs := runAgentAgainst(t, url, "  allow_insecure_ws: true\n", 2*time.Second)
	if code != 0 || !strings.Contains(out, " 1 session(s)") {
		t.Fatalf("with allow_insecure_ws: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "level=WARN") || !strings.Contains(errs, "allow_insecure_ws") {
		t.Errorf("no warning about the insecure link:\n%s", errs)
	}
}

// nonLoopbackIP returns an address of this machine off loopback, or skips.
func nonLoopbackIP(t *testing.T) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this machine")
	return ""
}

// TestGatewayCommandListening: `robot-agent gateway` prints the real port
// for :0 and warns when it listens off loopback.
func TestGatewayCommandListening(t *testing.T) {
	url := startGatewayProcess(t)
	if !strings.HasPrefix(url, "ws://127.0.0.1:") || strings.HasSuffix(url, ":0/v1/robot") {
		t.Fatalf("URL %q: want the real port", url)
	}
	cmd := exec.Command(os.Args[0], "gateway", "--listen", "0.0.0.0:0")
	cmd.Env = append(os.Environ(), "ROBOT_AGENT_TEST_MAIN=1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot run the test binary as a child process here (qemu-user without binfmt): %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	r := bufio.NewReader(stderr)
	var log strings.Builder
	for !strings.Contains(log.String(), "off loopback") {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no off-loopback warning:\n%s", log.String())
		}
		log.WriteString(l)
	}
	if !strings.Contains(log.String(), "level=WARN") || strings.Contains(log.String(), ":0/v1/robot") {
		t.Fatalf("log:\n%s", log.String())
	}
}
