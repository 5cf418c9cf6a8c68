package infra

import (
	"os"
	"path/filepath"
	"regexp"
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
	if slots == nil || gpus == nil || slots[1] != gpus[1] {
		t.Errorf("worker-gpu.yaml: -slots %v and nvidia.com/gpu %v must agree", slots, gpus)
	}
	for _, d := range []string{"deploy/Dockerfile", "deploy/Dockerfile.cuda"} {
		b, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(b), "./cmd/sfsweep") {
			t.Errorf("%s: %v", d, err)
		}
	}
}
