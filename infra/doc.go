// Package infra will wrap the external systems: the object store client (aws-sdk-go-v2),
// the embedded development stack (in-process Temporal server on SQLite and S3 gateway) and
// deployment files. Nothing here is implemented yet.
package infra
