package report

// A Table as Markdown: a pipe table, its notes below it.

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/status"
)

// markdown is the cell as a Markdown table shows it, in a table of n seeds.
func (c TableCell) markdown(n int) string {
	switch c.Status {
	case status.Completed:
		return bold(valueText(c.Value, c.Spread, " ± "), c.Best, "**", "**") + seedNote(c.Spread, n)
	case status.Diverged:
		if c.Step > 0 {
			return "diverged (step " + strconv.Itoa(c.Step) + ")"
		}
		return "diverged"
	}
	return c.text()
}

// WriteMarkdown writes the table as a GitHub pipe table, the title in bold above it and
// the caption note below. Best values are **bold**.
func (t *Table) WriteMarkdown(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("report: write table markdown: %w", err)
	}
	header, body := t.grid(markdownStyle)
	var b strings.Builder
	if t.Title != "" {
		b.WriteString("**" + escapeMarkdown(t.Title) + "**\n\n")
	}
	writePipeRow(&b, header)
	align := make([]string, len(header))
	for i := range align {
		align[i] = ":---:"
	}
	if t.Kind == TableHyperparameters {
		align[0] = "---:"
		for i := 1; i < len(align); i++ {
			align[i] = ":---"
		}
	}
	writePipeRow(&b, align)
	for _, row := range body {
		writePipeRow(&b, row)
	}
	b.WriteString("\n" + t.note(markdownStyle) + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write table markdown: %w", err)
	}
	return nil
}

func writePipeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// escapeMarkdown escapes the characters that would end a pipe-table cell or start emphasis
// or code.
func escapeMarkdown(s string) string {
	return markdownEscaper.Replace(s)
}

var markdownEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`, `*`, `\*`, `_`, `\_`, "`", "\\`")
