package dist

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// A plan's body_file and multipart files travel with it: a segment's pod
// loads the plan, which reads them. Before, the ConfigMap held only the
// data sources and TLS files, and every pod failed to load the plan
// ("cannot read upload-order.json").
func TestManifestCarriesEveryFileThePlanReads(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"plan.yaml": `name: upload
target: http://127.0.0.1:9
scenarios:
  s:
    steps:
      - {post: /orders, body_file: order.json}
      - post: /notes
        multipart:
          note: {file: note.txt}
load: {stages: [{duration: 1s, users: 1}]}
`,
		"order.json": `{"id": 1}`,
		"note.txt":   "hello",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	planFile := filepath.Join(dir, "plan.yaml")
	p, err := plan.LoadFileWith(planFile, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 11, 58, 0, 0, time.UTC)
	m, err := BuildManifest(p, K8s{Namespace: "load", Segments: 2, StartAt: now.Add(2 * time.Minute), PlanFile: planFile, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// Unpack the ConfigMap as the pod's volume would, and load the plan
	// there.
	pod := t.TempDir()
	for _, v := range m.Job.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		for _, it := range v.ConfigMap.Items {
			text, ok := m.ConfigMap.Data[it.Key]
			if !ok {
				text = string(m.ConfigMap.BinaryData[it.Key])
			}
			path := filepath.Join(pod, filepath.FromSlash(it.Path))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := plan.LoadFileWith(filepath.Join(pod, "plan.yaml"), plan.LoadOptions{}); err != nil {
		t.Errorf("the plan does not load from its ConfigMap: %v\nkeys: %v", err, keys(m.ConfigMap.Data))
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
