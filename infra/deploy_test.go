package infra

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The deployment files parse, and a GPU worker trains on as many slots as it asks GPUs for.
func TestDeployFiles(t *testing.T) {
	files, _ := filepath.Glob("deploy/*.yaml")
	k8s, _ := filepath.Glob("deploy/k8s/*.yaml")
	files = append(files, k8s...)
	if len(files) < 4 {
		t.Fatalf("%d deployment files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := os.ReadFile("deploy/k8s/worker-gpu.yaml")
	slots := regexp.MustCompile(`"-slots", "(\d+)"`).FindStringSubmatch(string(b))
	gpus := regexp.MustCompile(`nvidia.com/gpu: (\d+)`).FindStringSubmatch(string(b))
	if slots == nil || gpus == nil {
		t.Fatalf("worker-gpu.yaml: -slots %v, nvidia.com/gpu %v", slots, gpus)
	}
	if s, g := atoi(slots[1]), atoi(gpus[1]); s < g || s%g != 0 {
		t.Errorf("worker-gpu.yaml: -slots %d over %d GPUs: each GPU must train the same number of trials, at least one", s, g)
	}
	// every GPU worker trains on all the GPUs it is given, one process each
	for _, f := range []string{"deploy/k8s/worker-gpu.yaml", "deploy/compose.yaml", "deploy/Dockerfile.cuda"} {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(b), `"-gpus", "all"`) {
			t.Errorf("%s: its GPU worker does not run with -gpus all", f)
		}
	}
	for _, d := range []string{"deploy/Dockerfile", "deploy/Dockerfile.cuda"} {
		b, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(b), "./cmd/sfsweep") {
			t.Errorf("%s: %v", d, err)
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
