// Package archtest checks that the import graph points downwards: each package of the
// module has a floor (ARCHITECTURE.md draws them), imports only packages on lower floors,
// and only the rooms named for it import Temporal, the AWS SDK, gorgonia and the Temporal
// server. It has no code; its test is the check.
package archtest
