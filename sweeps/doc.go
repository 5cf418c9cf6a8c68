// Package sweeps will hold the sweep manifest: its schema, validation with errors that name
// the field, value and line, grid expansion into trials, and content-addressed trial IDs
// (refined SF-AdamW with C = 1/(1−β1) maps to the vanilla trial through
// sfadamw.Config.Canonical). Nothing here is implemented yet.
package sweeps
