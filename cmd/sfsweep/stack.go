package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
)

// stack is the embedded deployment: a Temporal server on a SQLite file, an S3 gateway on
// plain files, a store and a client.
type stack struct {
	server *devserver.Server
	gw     *s3gw.Gateway
	store  *s3store.Store
	client client.Client
}

// startStack starts the stack with its state under dir (the Temporal database, the S3
// objects and credentials); stop stops what started.
func startStack(ctx context.Context, dir string, ui bool, logger *slog.Logger) (*stack, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st := &stack{}
	var err error
	st.server, err = devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(dir, "temporal.db"), UI: ui, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("temporal server: %w", err)
	}
	st.gw, err = s3gw.Start(ctx, s3gw.Options{Root: filepath.Join(dir, "s3"), CredentialsFile: filepath.Join(dir, "s3-credentials.json")})
	if err != nil {
		st.stop()
		return nil, fmt.Errorf("s3 gateway: %w", err)
	}
	st.store, err = s3store.New(ctx, st.gw.StoreConfig(""))
	if err != nil {
		st.stop()
		return nil, err
	}
	st.client, err = client.Dial(client.Options{HostPort: st.server.HostPort(), Namespace: devserver.DefaultNamespace, Logger: sdklog.NewStructuredLogger(logger)})
	if err != nil {
		st.stop()
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	return st, nil
}

func (st *stack) stop() {
	if st.client != nil {
		st.client.Close()
	}
	if st.gw != nil {
		st.gw.Stop()
	}
	if st.server != nil {
		st.server.Stop()
	}
}
