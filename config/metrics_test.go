package config

import (
	"errors"
	"strings"
	"testing"
)

func TestMetricsListen(t *testing.T) {
	if d := Default(); d.Metrics.Listen != DefaultMetricsListen || !d.Metrics.Enabled() || !d.Metrics.IsDefault() {
		t.Fatalf("default metrics.listen %q: want %q, enabled", d.Metrics.Listen, DefaultMetricsListen)
	}
	for _, tc := range []struct {
		listen  string
		enabled bool
		bad     string // substring of the error; "" = valid
	}{
		{"off", false, ""},
		{"", false, ""},
		{"127.0.0.1:9464", true, ""},
		{"[::1]:9100", true, ""},
		{":0", true, ""},
		{"localhost", true, `metrics.listen: "localhost": not host:port`},
		{"127.0.0.1:http", true, `port "http" is not a number`},
		{"127.0.0.1:70000", true, `port "70000"`},
	} {
		c := Default()
		c.Metrics.Listen = tc.listen
		if c.Metrics.Enabled() != tc.enabled {
			t.Errorf("%q: Enabled %v", tc.listen, !tc.enabled)
		}
		err := c.Validate()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.listen, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%q: error %v, want one containing %q", tc.listen, err, tc.bad)
		}
	}
}
