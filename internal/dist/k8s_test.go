package dist

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/stampede-load/stampede/internal/plan"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const testPlan = "testdata/plan/plan.yaml"

func testManifest(t *testing.T, segments int) (*plan.Plan, *Manifest) {
	t.Helper()
	p, err := plan.LoadFileWith(testPlan, plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 11, 58, 0, 0, time.UTC)
	m, err := BuildManifest(p, K8s{Namespace: "load", Image: "registry.example.com/stampede:0.1", Segments: segments,
		StartAt: now.Add(2 * time.Minute), PlanFile: testPlan, CPU: "2", Memory: "1Gi", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return p, m
}

func TestManifestGolden(t *testing.T) {
	_, m := testManifest(t, 4)
	got, err := m.YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden := "testdata/manifest.golden.yaml"
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

// The written YAML decodes strictly (no unknown or misspelt field) back
// into the typed objects, and says what a distributed run needs.
func TestManifestSchema(t *testing.T) {
	for _, n := range []int{1, 3, 16} {
		p, m := testManifest(t, n)
		y, _ := m.YAML()
		docs := strings.Split(string(y), "\n---\n")
		if len(docs) != 2 {
			t.Fatalf("%d documents, want ConfigMap and Job", len(docs))
		}
		var cm corev1.ConfigMap
		var job batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(docs[0]), &cm); err != nil {
			t.Fatalf("configmap: %v", err)
		}
		if err := yaml.UnmarshalStrict([]byte(docs[1]), &job); err != nil {
			t.Fatalf("job: %v", err)
		}
		if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || job.Kind != "Job" || job.APIVersion != "batch/v1" {
			t.Errorf("kinds: %s %s, %s %s", cm.APIVersion, cm.Kind, job.APIVersion, job.Kind)
		}
		for _, name := range []string{cm.Name, job.Name} {
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				t.Errorf("name %q: %v", name, errs)
			}
		}
		s := job.Spec
		check := func(ok bool, what string) {
			t.Helper()
			if !ok {
				t.Errorf("N=%d: %s", n, what)
			}
		}
		check(s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion, "completionMode Indexed")
		check(s.Completions != nil && s.Parallelism != nil && *s.Completions == int32(n) && *s.Parallelism == int32(n),
			"parallelism = completions = N")
		check(s.BackoffLimitPerIndex != nil, "backoffLimitPerIndex set")
		check(s.PodReplacementPolicy != nil && *s.PodReplacementPolicy == batchv1.Failed,
			"podReplacementPolicy Failed (no replacement while the old pod still sends)")
		check(s.Template.Spec.RestartPolicy == corev1.RestartPolicyNever, "restartPolicy Never (podFailurePolicy requires it)")
		check(s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds >= int64((2*time.Minute+p.Load.Duration()).Seconds()),
			"a deadline past the start and the plan")
		// podFailurePolicy: any exit of stampede fails its index without a
		// retry; disruptions before it ran are replaced.
		rules := s.PodFailurePolicy.Rules
		check(len(rules) == 2, "two pod failure rules")
		r0 := rules[0]
		check(r0.Action == batchv1.PodFailurePolicyActionFailIndex && r0.OnExitCodes != nil &&
			*r0.OnExitCodes.ContainerName == ContainerName && r0.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn &&
			slices.Equal(r0.OnExitCodes.Values, []int32{0}), "first rule: FailIndex on any non-zero exit of stampede")
		check(rules[1].Action == batchv1.PodFailurePolicyActionIgnore && rules[1].OnPodConditions[0].Type == corev1.DisruptionTarget,
			"second rule: ignore disruptions")

		pod := s.Template.Spec
		check(len(pod.Containers) == 1, "one container")
		c := pod.Containers[0]
		args := strings.Join(c.Args, " ")
		check(strings.Contains(args, "--segment $(JOB_COMPLETION_INDEX)/"+strconv.Itoa(n)), "segment index from JOB_COMPLETION_INDEX: "+args)
		check(strings.Contains(args, "--start-at 2026-05-01T12:00:00Z"), "shared start time: "+args)
		check(strings.Contains(args, "--emit-result"), "result printed for the collector")
		check(strings.HasPrefix(args, "run /plan/plan.yaml "), "runs the mounted plan: "+args)
		check(len(c.Env) == 2 && c.Env[0].Name == "JOB_COMPLETION_INDEX" &&
			c.Env[0].ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']",
			"JOB_COMPLETION_INDEX declared so $(...) expands")
		check(c.Env[1].Name == TerminationEnv && c.Env[1].Value == c.TerminationMessagePath && c.TerminationMessagePath == "/dev/termination-log",
			"the segment writes its failure where the kubelet reads the termination message")
		check(pod.AutomountServiceAccountToken != nil && !*pod.AutomountServiceAccountToken, "no service-account token in the pod")
		check(s.TTLSecondsAfterFinished != nil && *s.TTLSecondsAfterFinished > 0, "a finished Job is removed in the end")
		check(strings.Contains(args, "--start-grace 30s"), "start grace covers a replacement ~10 s after a disruption: "+args)
		check(*pod.SecurityContext.RunAsNonRoot && *c.SecurityContext.ReadOnlyRootFilesystem, "non-root, read-only root")
		check(c.Resources.Limits.Cpu().String() == "2" && c.Resources.Requests.Memory().String() == "1Gi", "resources")

		// ConfigMap keys are valid and the volume maps each to its path.
		for k := range cm.Data {
			check(len(validation.IsConfigMapKey(k)) == 0, "configmap key "+k)
		}
		for k := range cm.BinaryData {
			check(len(validation.IsConfigMapKey(k)) == 0, "configmap key "+k)
		}
		check(cm.BinaryData["f1-codes.csv.gz"] != nil, "gzip data travels as binaryData")
	}
}

// What a pod sees: lay the ConfigMap out as the volume would, load the plan
// from there, and get the same plan (same hash, same rows) as here.
func TestConfigMapCarriesPlanAndData(t *testing.T) {
	p, m := testManifest(t, 2)
	dir := t.TempDir()
	vol := m.Job.Spec.Template.Spec.Volumes[0]
	for _, it := range vol.ConfigMap.Items {
		b := []byte(m.ConfigMap.Data[it.Key])
		if v, ok := m.ConfigMap.BinaryData[it.Key]; ok {
			b = v
		}
		path := filepath.Join(dir, filepath.FromSlash(it.Path))
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := m.Job.Spec.Template.Spec.Containers[0].Args
	inPod := filepath.Join(dir, strings.TrimPrefix(args[1], PlanMount+"/"))
	q, err := plan.LoadFileWith(inPod, plan.LoadOptions{})
	if err != nil {
		t.Fatalf("the pod could not load the plan: %v", err)
	}
	if !bytes.Equal(q.Source, p.Source) {
		t.Error("plan text differs in the pod, so merged segments would not match the plan's hash")
	}
	for i := range p.Data {
		if len(q.Data[i].Rows) != len(p.Data[i].Rows) {
			t.Errorf("data %s: %d rows in the pod, %d here", p.Data[i].Name, len(q.Data[i].Rows), len(p.Data[i].Rows))
		}
	}
}

func TestManifestRefuses(t *testing.T) {
	p, _ := testManifest(t, 1)
	start := time.Now().Add(time.Minute)
	cases := []struct {
		k    K8s
		want string
	}{
		{K8s{Segments: 0, StartAt: start, PlanFile: testPlan}, "at least 1"},
		{K8s{Segments: 2, PlanFile: testPlan}, "start"},
		{K8s{Segments: 2, StartAt: start, PlanFile: testPlan, CPU: "lots"}, "cpu"},
	}
	for _, c := range cases {
		if _, err := BuildManifest(p, c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.k, err, c.want)
		}
	}
	// A data file outside the plan's directory is not in the pod.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("a\n1\n"), 0o644)
	sub := filepath.Join(dir, "plans")
	os.Mkdir(sub, 0o755)
	pf := filepath.Join(sub, "p.yaml")
	os.WriteFile(pf, []byte("name: x\ntarget: http://h\ndata: {d: {file: ../d.csv}}\nscenarios: {s: {steps: [{get: \"/{{ data.d.a }}\"}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"), 0o644)
	q, err := plan.LoadFileWith(pf, plan.LoadOptions{AllowFiles: []string{dir}}) // run --allow-files
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildManifest(q, K8s{Segments: 2, StartAt: start, PlanFile: pf}); err == nil || !strings.Contains(err.Error(), "outside the plan's directory") {
		t.Errorf("err = %v, want it to refuse ../d.csv", err)
	}
}

func TestJobName(t *testing.T) {
	cases := map[string]string{
		"Election Day (k8s)":    "stampede-election-day-k8s",
		"":                      "stampede-run",
		strings.Repeat("a", 80): "stampede-" + strings.Repeat("a", 43),
	}
	for in, want := range cases {
		if got := JobName(in); got != want {
			t.Errorf("JobName(%q) = %q, want %q", in, got, want)
		}
	}
}

// What the API server refuses is refused here first, naming the rule:
// the names the issue saw refused by a real API server, and enums.
func TestValidateBeforeSending(t *testing.T) {
	p, _ := testManifest(t, 1)
	start := time.Now().Add(time.Minute)
	long := strings.Repeat("a", 62)
	cases := []struct {
		k    K8s
		want string
	}{
		// 62 characters: "aaa…a-2" (64) is no DNS label.
		{K8s{Name: long, Segments: 3}, "at most 61"},
		{K8s{Name: strings.Repeat("a", 61), Segments: 11}, "at most 60"},
		{K8s{Name: "run.v2", Segments: 3}, "no dots"},
		{K8s{Name: "Run", Segments: 3}, "DNS-1123 label"},
		{K8s{Name: "run", Segments: 3, PullPolicy: "Sometimes"}, "Always, IfNotPresent, Never"},
		{K8s{Name: "run", Segments: 3, PullPolicy: "always"}, "case matters"},
		{K8s{Name: "run", Segments: 3, Namespace: "Load"}, "--namespace"},
		{K8s{Name: "run", Segments: 3, EnvFromSecret: "my_secret"}, "--env-from-secret"},
		{K8s{Name: "run", Segments: 3, Image: "registry.example.com/stampede:0.1 "}, "--image"},
	}
	for _, c := range cases {
		c.k.StartAt, c.k.PlanFile = start, testPlan
		if _, err := BuildManifest(p, c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.k, err, c.want)
		}
	}
	// The longest name allowed passes, with every pod hostname a label.
	for _, n := range []int{1, 3, 10, 11, 1000} {
		name := strings.Repeat("a", MaxName(n))
		m, err := BuildManifest(p, K8s{Name: name, Segments: n, StartAt: start, PlanFile: testPlan, PullPolicy: "IfNotPresent"})
		if err != nil {
			t.Fatalf("N=%d, name of %d: %v", n, len(name), err)
		}
		if errs := validation.IsDNS1123Label(fmt.Sprintf("%s-%d", m.Job.Name, n-1)); len(errs) > 0 {
			t.Errorf("N=%d: hostname of the last pod: %v", n, errs)
		}
	}
	// A default name from a long plan name is cut to fit the segments.
	q := *p
	q.Name = strings.Repeat("x", 80)
	m, err := BuildManifest(&q, K8s{Segments: 100000, StartAt: start, PlanFile: testPlan})
	if err != nil {
		t.Fatal(err)
	}
	if errs := validation.IsDNS1123Label(m.Job.Name + "-99999"); len(errs) > 0 {
		t.Errorf("default name %q: %v", m.Job.Name, errs)
	}
}
