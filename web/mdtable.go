package web

// A table of the report, read back from its Markdown rendering for the page.

import (
	"strings"

	"github.com/sfsweep/sfsweep/report"
)

// table is a report table as the page shows it: the Markdown file's title, pipe table
// and caption, every piece plain text that the template escapes.
type table struct {
	Name   string
	Title  []span
	Header []cell
	Rows   [][]cell
	Note   []span
	Files  []file // its downloads, one per format
	// HeatMap is the name of its heat map's plot, if the report drew one.
	HeatMap *plot
}

// cell is a table cell: runs of text, some bold.
type cell []span

type span struct {
	Text string
	Bold bool
}

// parseTable reads the Markdown the report writes for a table (report.Table.WriteMarkdown
// and the search table): an optional bold title line, a pipe table, then caption lines.
// Anything it does not recognise is kept as caption text, never dropped.
func parseTable(md string) table {
	var t table
	var note []string
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	inTable := false
	for _, ln := range lines {
		trim := strings.TrimSpace(ln)
		switch {
		case strings.HasPrefix(trim, "|"):
			cells := splitRow(trim)
			switch {
			case !inTable && t.Header == nil:
				t.Header = cells
				inTable = true
			case isRule(cells):
			default:
				t.Rows = append(t.Rows, cells)
			}
		case trim == "":
			inTable = false
		case t.Header == nil && t.Title == nil:
			t.Title = inline(trim)
		default:
			inTable = false
			note = append(note, trim)
		}
	}
	if len(note) > 0 {
		t.Note = inline(strings.Join(note, " "))
	}
	return t
}

// splitRow splits a pipe-table row into its cells; "\|" is a pipe inside a cell.
func splitRow(row string) []cell {
	var cells []cell
	for _, c := range report.TableCells(row) {
		cells = append(cells, inline(c))
	}
	return cells
}

// isRule reports whether a row is the alignment row under the header (| :---: | ---: |).
func isRule(cells []cell) bool {
	for _, c := range cells {
		if len(c) != 1 || c[0].Bold || strings.Trim(c[0].Text, ":-") != "" || c[0].Text == "" {
			return false
		}
	}
	return len(cells) > 0
}

// inline splits Markdown text into plain and bold runs ("**…**") and removes the
// backslash escapes the report adds (\*, \|, \_, \`, \\).
func inline(s string) []span {
	var out []span
	var cur strings.Builder
	bold := false
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, span{Text: cur.String(), Bold: bold})
			cur.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_|", s[i+1]) >= 0:
			cur.WriteByte(s[i+1])
			i++
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '*':
			flush()
			bold = !bold
			i++
		default:
			cur.WriteByte(s[i])
		}
	}
	flush()
	return out
}
