package temporalclient

import (
	"flag"
	"os"
	"strings"
	"testing"
)

func TestFromEnvAndFlags(t *testing.T) {
	env := map[string]string{
		EnvAddress:   "temporal.example:7233",
		EnvNamespace: "sweeps",
		EnvTLS:       "true",
		EnvCACert:    "/etc/ca.pem",
	}
	o, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.Address != "temporal.example:7233" || o.Namespace != "sweeps" || !o.TLS || o.CACert != "/etc/ca.pem" {
		t.Fatalf("FromEnv = %+v", o)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"-temporal-namespace", "other", "-temporal-tls=false"}); err != nil {
		t.Fatal(err)
	}
	if o.Address != "temporal.example:7233" || o.Namespace != "other" || o.TLS {
		t.Fatalf("after flags: %+v", o)
	}
	if _, err := FromEnv(func(k string) string { return map[string]string{EnvTLS: "maybe"}[k] }); err == nil || !strings.Contains(err.Error(), `TEMPORAL_TLS="maybe"`) {
		t.Fatalf("FromEnv with TEMPORAL_TLS=maybe: %v", err)
	}
}

func TestClientOptions(t *testing.T) {
	c, err := Options{}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if c.HostPort != DefaultAddress || c.Namespace != DefaultNamespace || c.ConnectionOptions.TLS != nil || c.Credentials != nil {
		t.Fatalf("zero Options: %+v", c)
	}
	c, err = Options{Address: "cloud.example:7233", APIKey: "k"}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if c.Credentials == nil || c.ConnectionOptions.TLS == nil {
		t.Fatal("API key without credentials or TLS")
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Address: "no-port"}, `address "no-port"`},
		{Options{ClientCert: "c.pem"}, `client certificate "c.pem" and key ""`},
		{Options{ServerName: "x"}, `server name "x": needs TLS`},
		{Options{CACert: "/nonexistent/ca.pem"}, "CA certificate"},
		{Options{CACert: os.Args[0]}, "no PEM certificate"},
	} {
		if _, err := tc.o.ClientOptions(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
}
