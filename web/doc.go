// Package web is the sweep page: a read-only site that shows sweeps as they run, made for
// optimizer research. It lists the sweeps of a store; a sweep's page has its progress and
// ETA, a trial table (sortable, filterable, paginated) with each trial's state and losses
// at every iterate, the failures as they happen, the report's tables with their heat maps,
// the validation curves of chosen trials at x, y, EWA(x), EWA(y) and w, the probe plots,
// and a download of every table and plot file.
//
// What it promises:
//   - It reads the object store (a trial's record through package trial; the trial index
//     report.Build writes, tables, plots) and, when it has a Temporal client, the sweep's
//     workflow for live state; a finished sweep's page needs the store alone.
//   - It never writes. It serves only the objects of a sweep's own output (its tables and
//     plots) and its trials' curves; any other key is refused.
//   - Everything that comes from a manifest or a result is escaped (html/template); no
//     credential is ever part of a page. Beyond loopback it requires a bearer token.
//   - The page updates itself by short polling of HTML fragments; the curves are drawn by
//     the page's own small script. Templates, script and style are embedded in the binary.
package web
