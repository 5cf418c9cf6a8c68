// Package infra holds sfsweep's wrappers of external systems; it is the only package tree
// that imports aws-sdk-go-v2, versitygw and the Temporal server.
//
//   - s3store: blob.Store on any S3-compatible object store (aws-sdk-go-v2).
//   - s3gw: the embedded S3 gateway (versitygw, posix backend): objects as plain files.
//   - devserver: the embedded Temporal server on SQLite, with the Web UI if asked for.
//   - temporalclient: dialling a remote Temporal cluster (address, namespace, TLS, API key).
//
// The embedded mode runs s3gw and devserver in the sfsweep process; the distributed mode
// uses s3store and temporalclient against external services.
package infra
