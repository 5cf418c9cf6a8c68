package web

import (
	"bytes"
	"html/template"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/workflows"
)

// The live part of a sweep's page lists the GPUs its trials train on, with their trials and
// memory, and says nothing of GPUs when none is in use.
func TestGPUSection(t *testing.T) {
	tmpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	render := func(v *sweepView) string {
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, "sweep-live", v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	gpus := []sweepclient.GPUUse{{Worker: "12@node-a@", Memory: workflows.GPUMemory{Name: "GPU 0", Total: 80 << 30, Reserved: 70 << 30, Free: 9 << 30, Trials: 2, Waiting: 1},
		Training: []string{"a", "b"}, Waiting: []string{"c"}}}
	page := render(&sweepView{GPUs: gpus})
	for _, want := range []string{`<section id="gpus">`, "<td>GPU 0</td><td><code>12@node-a@</code></td><td>a, b</td><td>c</td>",
		`<td class="num">70.00 GiB</td><td class="num">9.00 GiB</td><td class="num">80.00 GiB</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q:\n%s", want, page)
		}
	}
	if page := render(&sweepView{}); strings.Contains(page, "GPU") {
		t.Errorf("a sweep on no GPU shows GPUs:\n%s", page)
	}
}
