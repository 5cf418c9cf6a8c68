// Package report turns a sweep's results into the paper's tables and plots: the
// C-sensitivity tables (tab:c_sweep_05M, tab:c_sweep_2M) and the hyperparameter tables
// (tab:hyperparameter_main and its variants) rendered as Markdown, CSV, LaTeX and JSON; the
// heat map of a C-sensitivity table; the validation curves of the trials at each iterate;
// and the plots of the probes (decay probe, LR-decay branch, checkpoint interpolation).
//
// Every renderer is a pure function of plain data: the same results, in any input order,
// give the same bytes. BuildTables builds a manifest's tables from its trials' outcomes.
// Package analysis holds the paper's theory; this package holds what a sweep reports.
package report
