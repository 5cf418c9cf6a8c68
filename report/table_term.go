package report

// A table for a terminal: the Markdown tables this package writes, as aligned columns.

import (
	"strings"
	"unicode/utf8"
)

// Terminal rewrites Markdown for a terminal: each pipe table as columns aligned as its
// separator row says, under a rule, the other lines as text. Markdown's escapes are undone
// and its emphasis is dropped; a bold cell is shown in bold where bold is true (ANSI, for a
// terminal), and else marked with a trailing "*", which a last line explains.
func Terminal(md string, bold bool) string {
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	var b strings.Builder
	marked := false
	for i := 0; i < len(lines); {
		if !isTableRow(lines[i]) {
			b.WriteString(plainText(lines[i]) + "\n")
			i++
			continue
		}
		j := i
		for j < len(lines) && isTableRow(lines[j]) {
			j++
		}
		marked = writeTermTable(&b, lines[i:j], bold) || marked
		i = j
	}
	if marked {
		b.WriteString("*: bold in the Markdown table\n")
	}
	return b.String()
}

func isTableRow(l string) bool {
	l = strings.TrimSpace(l)
	return len(l) >= 2 && l[0] == '|' && l[len(l)-1] == '|'
}

// TableCells splits a pipe-table row into its cells, trimmed; "\|" is a pipe inside a
// cell and stays escaped in it.
func TableCells(row string) []string {
	row = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(row), "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// markdownUnescaper undoes the escapes escapeMarkdown writes.
var markdownUnescaper = strings.NewReplacer(`\|`, `|`, `\_`, `_`, `\*`, `*`, `\\`, `\`, `\[`, `[`, `\]`, `]`, "\\`", "`", `\<`, `<`, `\>`, `>`, `\#`, `#`)

// plainText is a line of Markdown without its bold and italics and escapes.
func plainText(l string) string {
	l = strings.ReplaceAll(l, "**", "")
	if t := strings.TrimSpace(l); len(t) > 2 && t[0] == '*' && t[len(t)-1] == '*' && t[len(t)-2] != '\\' {
		l = t[1 : len(t)-1]
	}
	return markdownUnescaper.Replace(l)
}

// writeTermTable writes the rows of one pipe table, the second the separator, and reports
// whether it marked a bold cell with "*".
func writeTermTable(b *strings.Builder, rows []string, bold bool) (marked bool) {
	type cell struct {
		text string
		bold bool
	}
	var grid [][]cell
	var align []byte // 'l', 'r' or 'c' per column
	for k, r := range rows {
		cells := TableCells(r)
		if k == 1 && isSeparator(cells) {
			for _, c := range cells {
				switch {
				case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":"):
					align = append(align, 'c')
				case strings.HasSuffix(c, ":"):
					align = append(align, 'r')
				default:
					align = append(align, 'l')
				}
			}
			continue
		}
		row := make([]cell, len(cells))
		for i, c := range cells {
			isBold := len(c) > 4 && strings.HasPrefix(c, "**") && strings.HasSuffix(c, "**")
			text := plainText(c)
			if isBold && !bold {
				text += "*"
				marked = true
			}
			row[i] = cell{text, isBold && bold}
		}
		grid = append(grid, row)
	}
	var width []int
	for _, row := range grid {
		for i, c := range row {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c.text))
		}
	}
	for k, row := range grid {
		var line strings.Builder
		for i, c := range row {
			pad := width[i] - utf8.RuneCountInString(c.text)
			left := 0
			if i < len(align) {
				switch align[i] {
				case 'r':
					left = pad
				case 'c':
					left = pad / 2
				}
			}
			if i > 0 {
				line.WriteString("  ")
			}
			text := c.text
			if c.bold {
				text = "\x1b[1m" + text + "\x1b[0m"
			}
			line.WriteString(strings.Repeat(" ", left) + text + strings.Repeat(" ", pad-left))
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		if k == 0 && len(align) > 0 {
			total := 2 * (len(width) - 1)
			for _, w := range width {
				total += w
			}
			b.WriteString(strings.Repeat("─", total) + "\n")
		}
	}
	return marked
}

// isSeparator reports whether cells are a pipe table's separator row (---, :---:, ---:).
func isSeparator(cells []string) bool {
	for _, c := range cells {
		c = strings.Trim(c, ":")
		if c == "" || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return len(cells) > 0
}
