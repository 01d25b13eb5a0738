package dist

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/stampede-load/stampede/internal/plan"
)

func dataPVCManifest(t *testing.T, segments int, claim, subPath string) (*plan.Plan, *Manifest) {
	t.Helper()
	p, err := plan.LoadFileWith(testPlan, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 11, 58, 0, 0, time.UTC)
	m, err := BuildManifest(p, K8s{Namespace: "load", Image: "registry.example.com/stampede:0.1", Segments: segments,
		StartAt: now.Add(2 * time.Minute), PlanFile: testPlan, CPU: "2", Memory: "1Gi", Now: now,
		DataPVC: claim, DataSubPath: subPath})
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

func TestManifestDataPVCGolden(t *testing.T) {
	_, m := dataPVCManifest(t, 4, "election-data", "2026/voters")
	got, err := m.YAML()
	if err != nil {
		t.Fatal(err)
	}
	// It decodes strictly: no misspelt field in the mount or the volume.
	docs := strings.Split(string(got), "\n---\n")
	var job batchv1.Job
	if len(docs) != 2 || yaml.UnmarshalStrict([]byte(docs[1]), &job) != nil {
		t.Fatalf("the job does not decode strictly:\n%s", got)
	}
	golden := "testdata/manifest-data-pvc.golden.yaml"
	if *update {
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/dist -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("manifest differs from %s (rerun with -update if the change is meant):\n%s", golden, got)
	}
}

// With --data-pvc the data files stay out of the ConfigMap, the claim is
// mounted read-only at /data, and the pod reads the data from there: lay
// out the ConfigMap as its volume and the claim as a directory, run the
// pod's own arguments' loading, and get the plan with the segment's share.
func TestDataPVCPodReadsItsShare(t *testing.T) {
	p, m := dataPVCManifest(t, 2, "election-data", "")
	cm := m.ConfigMap
	if len(cm.Data)+len(cm.BinaryData) != 1 || cm.Data["plan.yaml"] == "" {
		keys := slices.Collect(func(yield func(string) bool) {
			for k := range cm.Data {
				yield(k)
			}
			for k := range cm.BinaryData {
				yield(k)
			}
		})
		t.Fatalf("ConfigMap holds %v; want the plan only", keys)
	}
	spec := m.Job.Spec.Template.Spec
	c := spec.Containers[0]
	i := slices.Index(c.Args, "--data-dir")
	if i < 0 || c.Args[i+1] != DataMount {
		t.Fatalf("args %v lack --data-dir %s", c.Args, DataMount)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool {
		return v.Name == "data" && v.MountPath == DataMount && v.ReadOnly && v.SubPath == ""
	}) {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	var claim *corev1.PersistentVolumeClaimVolumeSource
	for _, v := range spec.Volumes {
		if v.Name == "data" {
			claim = v.PersistentVolumeClaim
		}
	}
	if claim == nil || claim.ClaimName != "election-data" || !claim.ReadOnly {
		t.Fatalf("data volume %+v", claim)
	}

	planDir, dataDir := t.TempDir(), t.TempDir()
	for _, it := range spec.Volumes[0].ConfigMap.Items {
		os.WriteFile(filepath.Join(planDir, it.Path), []byte(cm.Data[it.Key]), 0o644)
	}
	// The claim holds the data at their paths relative to the plan.
	for _, ds := range p.Data {
		rel, _ := filepath.Rel(filepath.Dir(testPlan), ds.File)
		b, err := os.ReadFile(ds.File)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dataDir, rel)), 0o755)
		os.WriteFile(filepath.Join(dataDir, rel), b, 0o644)
	}
	inPod := filepath.Join(planDir, strings.TrimPrefix(c.Args[1], PlanMount+"/"))
	for seg := range 2 {
		q, err := plan.LoadFileWith(inPod, plan.LoadOptions{DataDir: dataDir, Index: seg, Count: 2})
		if err != nil {
			t.Fatalf("segment %d: the pod could not load the plan: %v", seg, err)
		}
		if !bytes.Equal(q.Source, p.Source) {
			t.Error("plan text differs in the pod")
		}
		voters := q.Data[0]
		if want := (len(p.Data[0].Rows) - seg + 1) / 2; len(voters.Rows) != want || voters.TotalRows != len(p.Data[0].Rows) {
			t.Errorf("segment %d/2 kept %d of %d voters, want %d", seg, len(voters.Rows), voters.TotalRows, want)
		}
		if len(q.Data[1].Rows) != len(p.Data[1].Rows) {
			t.Errorf("random source: %d rows in the pod, %d here", len(q.Data[1].Rows), len(p.Data[1].Rows))
		}
	}
	// Without the claim's files the pod refuses at start, as a local run
	// does, naming the directory.
	if _, err := plan.LoadFileWith(inPod, plan.LoadOptions{DataDir: t.TempDir(), Index: 0, Count: 2}); err == nil ||
		!strings.Contains(err.Error(), "not found (paths are relative to") {
		t.Errorf("err = %v", err)
	}
}

func TestDataPVCRefuses(t *testing.T) {
	p, _ := testManifest(t, 1)
	start := time.Now().Add(time.Minute)
	cases := []struct {
		k    K8s
		want string
	}{
		{K8s{DataPVC: "Election_Data"}, "--data-pvc \"Election_Data\""},
		{K8s{DataPVC: "data", DataSubPath: "/abs"}, "relative path inside the claim"},
		{K8s{DataPVC: "data", DataSubPath: "a/../../b"}, "without '..'"},
		{K8s{DataSubPath: "a"}, "needs a claim"},
	}
	for _, c := range cases {
		c.k.Segments, c.k.StartAt, c.k.PlanFile = 3, start, testPlan
		if _, err := BuildManifest(p, c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.k, err, c.want)
		}
	}
}

// A data file too large for the ConfigMap: the error names --data-pvc, and
// with it the manifest is made (the file is not in it).
func TestConfigMapTooLargeNamesDataPVC(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id\n")
	for b.Len() < 1100*1024 {
		b.WriteString("voter-000000000000000000000000000000\n")
	}
	os.WriteFile(filepath.Join(dir, "voters.csv"), []byte(b.String()), 0o644)
	pf := filepath.Join(dir, "p.yaml")
	os.WriteFile(pf, []byte("name: big\ntarget: http://h\ndata: {v: {file: voters.csv, pick: unique}}\nscenarios: {s: {steps: [{get: \"/{{ data.v.id }}\"}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"), 0o644)
	p, err := plan.LoadFileWith(pf, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Minute)
	if _, err := BuildManifest(p, K8s{Segments: 2, StartAt: start, PlanFile: pf}); err == nil || !strings.Contains(err.Error(), "--data-pvc CLAIM") {
		t.Fatalf("err = %v, want it to name --data-pvc", err)
	}
	m, err := BuildManifest(p, K8s{Segments: 2, StartAt: start, PlanFile: pf, DataPVC: "voters"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.ConfigMap.Data) + len(m.ConfigMap.BinaryData); n != 1 {
		t.Errorf("ConfigMap has %d keys, want the plan only", n)
	}
}
