// Package report turns a sweep's results into the paper's tables and plots: the
// C-sensitivity tables (tab:c_sweep_05M, tab:c_sweep_2M) and the hyperparameter tables
// (tab:hyperparameter_main and its variants) rendered as Markdown, CSV, LaTeX and JSON; the
// heat map of a C-sensitivity table; the validation curves of the trials at each iterate;
// the plots of the probes (decay probe, LR-decay branch, checkpoint interpolation); a
// search's table and plots; the paper's findings checked; and the index of an output's
// trials.
//
// Build is the entry point: it loads a manifest's outcomes (Load), builds its tables
// (BuildTables), draws its plots and writes them all, with the index (MakeIndex), under
// the manifest's output, which it guards (CheckOutput). Findings checks the paper's
// claims on loaded results and WriteReport writes the Markdown report of several sweeps.
//
// report is presentation: it reads what a trial left in the store only through package
// trial, and every renderer is a pure function of plain data: the same results, in any
// input order, give the same bytes. Package analysis holds the paper's theory; this
// package holds what a sweep reports.
package report
