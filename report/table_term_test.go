package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A table written as Markdown reads as aligned columns in a terminal: its title and note
// as text without Markdown, its cells centred under a rule, bold as ANSI bold or marked.
func TestTerminal(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("testdata", "tables", "statuses.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := Terminal(string(md), false)
	want := `Statuses & rounding: 100%_done

β1   Vanilla    C=5             50
───────────────────────────────────────────
0.1   110.8    54.80*  diverged (step 1200)
0.5   38.42*   38.42*         failed
0.9  diverged    --             --

Test perplexity under varying C values. Bold: the best in each row by validation loss (the test set is only reported); --: not run.
*: bold in the Markdown table
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	lines := strings.Split(got, "\n")
	for _, l := range lines[2:7] {
		if n := utf8.RuneCountInString(l); n > 43 {
			t.Errorf("line %q: %d columns, wider than the rule", l, n)
		}
	}

	ansi := Terminal(string(md), true)
	if !strings.Contains(ansi, "\x1b[1m54.80\x1b[0m") || strings.Contains(ansi, "*") {
		t.Errorf("with bold:\n%q", ansi)
	}

	// right-aligned columns, an escaped pipe inside a cell, a line that is no table
	right := Terminal("| name | loss |\n| :--- | ---: |\n| a\\|b | 1.5 |\n| long\\_name | 10.25 |\nend", false)
	if want := "name        loss\n────────────────\na|b          1.5\nlong_name  10.25\nend\n"; right != want {
		t.Errorf("got\n%q\nwant\n%q", right, want)
	}
}
