package report

// A Table as LaTeX: a booktabs table, as in the paper's source.

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/status"
)

// latex is the cell as a LaTeX table shows it, in a table of n seeds.
func (c TableCell) latex(n int) string {
	switch c.Status {
	case status.Completed:
		return bold(valueText(c.Value, c.Spread, ` $\pm$ `), c.Best, `\textbf{`, `}`) + seedNote(c.Spread, n)
	case status.Diverged:
		if c.Step > 0 {
			return `$\dagger$\,` + strconv.Itoa(c.Step)
		}
		return `$\dagger$`
	}
	return c.text()
}

// WriteLaTeX writes the table as a booktabs table environment like the paper's source:
// tabular, \toprule, \midrule, \bottomrule, best values in \textbf{}, the title in bold
// leading the caption, and the label. As booktabs advises, it draws no vertical rule: the
// paper's rule after the row labels is a quad of space (@{\quad}).
func (t *Table) WriteLaTeX(w io.Writer) error {
	if err := t.check(); err != nil {
		return fmt.Errorf("report: write table latex: %w", err)
	}
	header, body := t.grid(latexStyle)
	var b strings.Builder
	placement, spec := "[h]", `@{}c@{\quad}`+strings.Repeat("c", len(t.Columns))+"@{}"
	if t.Kind == TableHyperparameters {
		placement, spec = "[!htp]", `@{}r@{\quad}lll@{}`
	}
	b.WriteString(`\begin{table}` + placement + "\n")
	b.WriteString("    \\centering\n    \\small\n")
	b.WriteString(`    \begin{tabular}{` + spec + "}\n")
	b.WriteString("        \\toprule\n")
	b.WriteString("        " + strings.Join(header, " & ") + ` \\` + "\n")
	b.WriteString("        \\midrule\n")
	for _, row := range body {
		b.WriteString("        " + strings.Join(row, " & ") + ` \\` + "\n")
	}
	b.WriteString("        \\bottomrule\n")
	b.WriteString("    \\end{tabular}\n")
	b.WriteString("    \\vspace{5pt}\n")
	caption := t.note(latexStyle)
	if t.Title != "" {
		caption = `\textbf{` + escapeLaTeX(t.Title) + `} ` + caption
	}
	b.WriteString(`    \caption{` + caption + "}\n")
	if t.Label != "" {
		b.WriteString(`    \label{` + t.Label + "}\n")
	}
	b.WriteString(`\end{table}` + "\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write table latex: %w", err)
	}
	return nil
}

// escapeLaTeX escapes LaTeX's special characters in plain text. Other Unicode (β) is
// written as is, for engines with Unicode input (pdfLaTeX with inputenc, XeLaTeX, LuaLaTeX).
func escapeLaTeX(s string) string {
	return latexEscaper.Replace(s)
}

var latexEscaper = strings.NewReplacer(
	`\`, `\textbackslash{}`, `&`, `\&`, `%`, `\%`, `$`, `\$`, `#`, `\#`, `_`, `\_`,
	`{`, `\{`, `}`, `\}`, `~`, `\textasciitilde{}`, `^`, `\textasciicircum{}`,
)
