// Package temporalclient dials a Temporal cluster for sfsweep's distributed mode: an
// address and namespace, with TLS (a CA, a client certificate for mutual TLS) or an API key,
// taken from flags or from the environment variables of the Temporal CLI.
package temporalclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// Defaults of Options, those of a local Temporal server.
const (
	DefaultAddress   = "localhost:7233"
	DefaultNamespace = "default"
)

// Options say how to reach a cluster. The zero value dials DefaultAddress and
// DefaultNamespace in plain text.
type Options struct {
	// Address is the frontend's host:port.
	Address string
	// Namespace to work in.
	Namespace string
	// APIKey authenticates as a bearer token (Temporal Cloud API keys); it implies TLS.
	APIKey string
	// TLS enables TLS with the system's roots. It is implied by APIKey, CACert and
	// ClientCert.
	TLS bool
	// CACert is a PEM file of the CAs that sign the server's certificate; empty means the
	// system's roots.
	CACert string
	// ClientCert and ClientKey are PEM files of the client's certificate and key, for
	// mutual TLS. Both or neither.
	ClientCert, ClientKey string
	// ServerName overrides the name the server's certificate is checked against.
	ServerName string
	// Logger receives the SDK's log; nil logs warnings and errors to the default slog logger.
	Logger *slog.Logger
}

// Environment variables read by FromEnv, the names the Temporal CLI uses.
const (
	EnvAddress    = "TEMPORAL_ADDRESS"
	EnvNamespace  = "TEMPORAL_NAMESPACE"
	EnvAPIKey     = "TEMPORAL_API_KEY"
	EnvTLS        = "TEMPORAL_TLS"
	EnvCACert     = "TEMPORAL_TLS_CA_PATH"
	EnvClientCert = "TEMPORAL_TLS_CERT_PATH"
	EnvClientKey  = "TEMPORAL_TLS_KEY_PATH"
	EnvServerName = "TEMPORAL_TLS_SERVER_NAME"
)

// FromEnv returns the options set in the environment (getenv is os.Getenv in programs).
// A TEMPORAL_TLS that is not a boolean is an error.
func FromEnv(getenv func(string) string) (Options, error) {
	o := Options{
		Address:    getenv(EnvAddress),
		Namespace:  getenv(EnvNamespace),
		APIKey:     getenv(EnvAPIKey),
		CACert:     getenv(EnvCACert),
		ClientCert: getenv(EnvClientCert),
		ClientKey:  getenv(EnvClientKey),
		ServerName: getenv(EnvServerName),
	}
	if v := getenv(EnvTLS); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("temporalclient: %s=%q: not a boolean", EnvTLS, v)
		}
		o.TLS = b
	}
	return o, nil
}

// RegisterFlags defines -temporal-address, -temporal-namespace, -temporal-api-key,
// -temporal-tls, -temporal-tls-ca, -temporal-tls-cert, -temporal-tls-key and
// -temporal-tls-server-name on fs, with the current values of o as defaults (call
// FromEnv first to let the environment provide them).
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Address, "temporal-address", o.Address, "Temporal frontend host:port (default "+DefaultAddress+"; env "+EnvAddress+")")
	fs.StringVar(&o.Namespace, "temporal-namespace", o.Namespace, "Temporal namespace (default "+DefaultNamespace+"; env "+EnvNamespace+")")
	fs.StringVar(&o.APIKey, "temporal-api-key", o.APIKey, "Temporal API key, implies TLS (env "+EnvAPIKey+"; prefer the environment: flags show in process lists)")
	fs.BoolVar(&o.TLS, "temporal-tls", o.TLS, "use TLS with the system's roots (env "+EnvTLS+")")
	fs.StringVar(&o.CACert, "temporal-tls-ca", o.CACert, "PEM file of the server's CA (env "+EnvCACert+")")
	fs.StringVar(&o.ClientCert, "temporal-tls-cert", o.ClientCert, "PEM file of the client certificate for mTLS (env "+EnvClientCert+")")
	fs.StringVar(&o.ClientKey, "temporal-tls-key", o.ClientKey, "PEM file of the client key for mTLS (env "+EnvClientKey+")")
	fs.StringVar(&o.ServerName, "temporal-tls-server-name", o.ServerName, "server name to verify the certificate against (env "+EnvServerName+")")
}

// ClientOptions returns the SDK options for o, with the certificates loaded.
func (o Options) ClientOptions() (client.Options, error) {
	addr := o.Address
	if addr == "" {
		addr = DefaultAddress
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return client.Options{}, fmt.Errorf("temporalclient: address %q: must be host:port", addr)
	}
	ns := o.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	copts := client.Options{HostPort: addr, Namespace: ns}
	if o.Logger != nil {
		copts.Logger = sdklog.NewStructuredLogger(o.Logger)
	} else {
		copts.Logger = sdklog.NewStructuredLogger(slog.New(warnOnly{slog.Default().Handler()}))
	}
	if o.APIKey != "" {
		copts.Credentials = client.NewAPIKeyStaticCredentials(o.APIKey)
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return client.Options{}, err
	}
	copts.ConnectionOptions.TLS = tlsCfg
	return copts, nil
}

// tlsConfig returns the TLS configuration of o, or nil for plain text.
func (o Options) tlsConfig() (*tls.Config, error) {
	if (o.ClientCert == "") != (o.ClientKey == "") {
		return nil, fmt.Errorf("temporalclient: client certificate %q and key %q: set both or neither", o.ClientCert, o.ClientKey)
	}
	if !o.TLS && o.APIKey == "" && o.CACert == "" && o.ClientCert == "" {
		if o.ServerName != "" {
			return nil, fmt.Errorf("temporalclient: server name %q: needs TLS", o.ServerName)
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, fmt.Errorf("temporalclient: CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporalclient: CA certificate %s: no PEM certificate in it", o.CACert)
		}
		cfg.RootCAs = pool
	}
	if o.ClientCert != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("temporalclient: client certificate %s and key %s: %w", o.ClientCert, o.ClientKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Dial connects to the cluster of o and checks that the frontend answers; the context
// bounds the attempt.
func Dial(ctx context.Context, o Options) (client.Client, error) {
	copts, err := o.ClientOptions()
	if err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		return nil, fmt.Errorf("temporalclient: dial %s (namespace %s): %w", copts.HostPort, copts.Namespace, err)
	}
	return c, nil
}

// warnOnly passes records of level Warn and above to its handler: the SDK logs every
// poll at Info and Debug.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(a)} }
func (w warnOnly) WithGroup(g string) slog.Handler      { return warnOnly{w.Handler.WithGroup(g)} }
