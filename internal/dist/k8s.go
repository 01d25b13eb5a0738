package dist

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/stampede-load/stampede/internal/plan"
)

// Kubernetes: one test as an Indexed Job. Pod i runs
// `stampede run /plan/PLAN --segment $(JOB_COMPLETION_INDEX)/N --start-at T
// --emit-result`; the plan and its data files come from a ConfigMap; the
// result comes back through the pod's log (emit.go). The objects are built
// from the typed API structs, so a field name or type that does not exist
// does not compile.

// Names and defaults of the manifest.
const (
	ContainerName = "stampede"
	PlanMount     = "/plan"
	// DataMount is where --data-pvc's volume is mounted, read-only; the
	// pods resolve the plan's data files against it (run --data-dir).
	DataMount = "/data"
	// DefaultImage is what the Dockerfile at the repository root builds;
	// push it where the cluster can pull it and pass --image.
	DefaultImage = "ghcr.io/stampede-load/stampede:latest"
	// DefaultK8sStartGrace lets a pod that came up a little after the
	// start time still run (it follows the global schedule, catching up).
	// A pod evicted or preempted before its container ran is replaced by
	// the Job controller about 10 s later (its pod-failure backoff, seen
	// against a real controller), and the replacement must still be
	// scheduled and start: 30 s lets one disruption near the start cost
	// nothing, where 10 s failed the whole run.
	DefaultK8sStartGrace = 30 * time.Second
	// DefaultK8sStartIn is how far ahead of the manifest the start time is
	// set by default: scheduling and a first image pull on every node,
	// with room for one replacement before the start.
	DefaultK8sStartIn = 2 * time.Minute
	// TerminationMessagePath is where the kubelet reads a container's
	// termination message; the segment writes its exact failure there
	// (TerminationEnv names the file), so the collector does not have to
	// guess the reason from the log's tail.
	TerminationMessagePath = "/dev/termination-log"
	// TerminationEnv, when set in a segment's environment, names the file
	// the process writes its failure to before it exits non-zero.
	TerminationEnv = "STAMPEDE_TERMINATION_MESSAGE_PATH"
	// finishedTTL keeps a finished Job (and through the owner reference
	// its ConfigMap, and its pods with their logs, the segments' results)
	// a day for collection by hand; then Kubernetes removes them.
	finishedTTL = 24 * 60 * 60
	// maxConfigMap is the API server's limit on a ConfigMap (1 MiB),
	// less room for the object's metadata.
	maxConfigMap = 1000 * 1024

	LabelRun = "stampede.io/run"
)

// K8s describes the manifest of one distributed run.
type K8s struct {
	// Name names the ConfigMap and the Job (default: from the plan name).
	Name      string
	Namespace string
	Image     string
	Segments  int
	StartAt   time.Time
	// StartGrace is how late a pod may start (DefaultK8sStartGrace).
	StartGrace time.Duration
	// PlanFile is the plan's path here; the plan's data and TLS files are
	// taken relative to its directory.
	PlanFile string
	// CPU and Memory, when set, are each pod's requests and limits
	// ("2", "1Gi"): a load generator should own its share of a node.
	CPU, Memory string
	// EnvFromSecret, when set, fills ${ENV} references of the plan from
	// this Secret's keys.
	EnvFromSecret string
	// PullPolicy is the image pull policy ("" leaves the cluster default).
	PullPolicy string
	// DataPVC, when set, names a PersistentVolumeClaim that holds the
	// plan's data files at their paths relative to the plan (below
	// DataSubPath within the claim, when set). It is mounted read-only at
	// DataMount in every pod, and the data files stay out of the
	// ConfigMap, which holds about 1 MiB.
	DataPVC, DataSubPath string
	// Now is when the manifest is made (default time.Now()); the Job's
	// deadline counts from it.
	Now time.Time
	// Level, when set, makes the pods run one level of gates or a sweep
	// (k8s_levels.go) instead of the whole plan.
	Level *LevelRun
	// StreamArgs are added to every pod's command line: the --output
	// streams each segment pushes itself, with the run's --testid and
	// --label, so every pod's series are the same run's.
	StreamArgs []string
}

// Manifest is what `stampede k8s` writes and applies.
type Manifest struct {
	ConfigMap *corev1.ConfigMap
	Job       *batchv1.Job
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// JobName turns a plan name into a DNS-1123 label short enough for the
// Job's pod names (Job names are at most 63 characters; the pods' hostnames
// add the index).
func JobName(planName string) string {
	s := dnsUnsafe.ReplaceAllString(strings.ToLower(planName), "-")
	s = strings.Trim(s, "-")
	if s == "" {
		s = "run"
	}
	s = "stampede-" + s
	if len(s) > 52 {
		s = strings.TrimRight(s[:52], "-")
	}
	return s
}

// PullPolicies are the image pull policies the API server accepts.
var PullPolicies = []string{string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)}

// MaxName is the longest name a run of this many segments may have: the
// Job controller gives each pod of an Indexed Job the hostname
// NAME-<index>, and a hostname is a DNS-1123 label (at most 63
// characters). The API server refuses the Job otherwise ("will not able to
// create pod with invalid DNS label").
func MaxName(segments int) int {
	return validation.DNS1123LabelMaxLength - len("-"+strconv.Itoa(max(segments-1, 0)))
}

// Validate checks what the API server would refuse, before anything is
// sent: names, their lengths with the pods' index suffix, enums. Each
// error names the rule.
func (k K8s) Validate() error {
	if k.Segments < 1 {
		return fmt.Errorf("segments: %d, expected at least 1", k.Segments)
	}
	if k.Name != "" {
		if errs := validation.IsDNS1123Label(k.Name); len(errs) > 0 {
			return fmt.Errorf("--name %q is not a valid name for a Job and its pods: %s (a DNS-1123 label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit; no dots)",
				k.Name, strings.Join(errs, "; "))
		}
		if m := MaxName(k.Segments); len(k.Name) > m {
			return fmt.Errorf("--name %q is %d characters; with %d segments the pods' hostnames are NAME-0 … NAME-%d, each a DNS-1123 label of at most 63 characters, so the name may have at most %d",
				k.Name, len(k.Name), k.Segments, k.Segments-1, m)
		}
	}
	if k.Namespace != "" {
		if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q: %s (a namespace is a DNS-1123 label)", k.Namespace, strings.Join(errs, "; "))
		}
	}
	if k.EnvFromSecret != "" {
		if errs := validation.IsDNS1123Subdomain(k.EnvFromSecret); len(errs) > 0 {
			return fmt.Errorf("--env-from-secret %q: %s (a Secret's name is a DNS-1123 subdomain)", k.EnvFromSecret, strings.Join(errs, "; "))
		}
	}
	if k.PullPolicy != "" && !slices.Contains(PullPolicies, k.PullPolicy) {
		return fmt.Errorf("--image-pull-policy %q: expected one of %s (case matters)", k.PullPolicy, strings.Join(PullPolicies, ", "))
	}
	if k.DataPVC != "" {
		if errs := validation.IsDNS1123Subdomain(k.DataPVC); len(errs) > 0 {
			return fmt.Errorf("--data-pvc %q: %s (a PersistentVolumeClaim's name is a DNS-1123 subdomain)", k.DataPVC, strings.Join(errs, "; "))
		}
	}
	if k.DataSubPath != "" {
		if k.DataPVC == "" {
			return errors.New("a data sub-path needs a claim: --data-pvc CLAIM:SUBPATH")
		}
		// The API server refuses an absolute subPath or one with a ".."
		// element: it must stay inside the volume.
		sp := k.DataSubPath
		if strings.HasPrefix(sp, "/") || slices.Contains(strings.Split(sp, "/"), "..") {
			return fmt.Errorf("--data-pvc %s:%s: the sub-path is a relative path inside the claim, without '..' elements", k.DataPVC, sp)
		}
	}
	if strings.ContainsAny(k.Image, " \t\r\n") {
		return fmt.Errorf("--image %q: an image reference has no spaces", k.Image)
	}
	return nil
}

// planFiles are the files a plan reads besides itself: every file it
// read as it loaded (body_file and multipart parts too: a segment's pod
// loads the plan, and failed at each one missing), and its data sources
// and TLS files, each once.
func planFiles(p *plan.Plan) []string {
	files := p.Files()
	for _, ds := range p.Data {
		files = append(files, ds.File)
	}
	files = append(files, p.TLS.CAFile, p.TLS.CertFile, p.TLS.KeyFile)
	var out []string
	for _, f := range files {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// configKey makes a ConfigMap key of a relative path (keys allow only
// [-._a-zA-Z0-9]); the volume maps each key back to its path.
func configKey(i int, rel string) string {
	return fmt.Sprintf("f%d-%s", i, regexp.MustCompile(`[^-._a-zA-Z0-9]+`).ReplaceAllString(filepath.Base(rel), "_"))
}

// BuildManifest builds the ConfigMap and the Indexed Job for p.
func BuildManifest(p *plan.Plan, k K8s) (*Manifest, error) {
	k, err := manifestDefaults(p, k)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"app.kubernetes.io/name":      "stampede",
		"app.kubernetes.io/component": "load-generator",
		LabelRun:                      k.Name,
	}
	cm, items, err := planConfigMap(p, k, labels)
	if err != nil {
		return nil, err
	}
	container, volumes, err := segmentContainer(k, items)
	if err != nil {
		return nil, err
	}
	return &Manifest{ConfigMap: cm, Job: segmentJob(p, k, labels, container, volumes)}, nil
}

// manifestDefaults checks k and fills in what the user left out.
func manifestDefaults(p *plan.Plan, k K8s) (K8s, error) {
	if err := k.Validate(); err != nil {
		return k, err
	}
	if k.StartAt.IsZero() {
		return k, errors.New("no start time: every segment needs the same --start-at")
	}
	if k.Name == "" {
		k.Name = JobName(p.Name)
		if m := MaxName(k.Segments); len(k.Name) > m {
			k.Name = strings.TrimRight(k.Name[:m], "-")
		}
	}
	if k.Image == "" {
		k.Image = DefaultImage
	}
	switch {
	case k.StartGrace < 0:
		// The pods would refuse to start at all: refused here, not made
		// the default in the manifest while the wait used it as given.
		return k, fmt.Errorf("start grace %v: expected a duration above zero, such as 30s", k.StartGrace)
	case k.StartGrace == 0:
		k.StartGrace = DefaultK8sStartGrace
	}
	if p.Target == "demo" {
		return k, errors.New("target: demo runs the demo inside each process; a cluster run needs a real target URL in the plan")
	}
	if k.Now.IsZero() {
		k.Now = time.Now()
	}
	return k, nil
}

// planConfigMap holds the plan and the files it reads (those on the data
// claim excepted), and the items that map its keys back to their paths
// beside the plan in the pods.
func planConfigMap(p *plan.Plan, k K8s, labels map[string]string) (*corev1.ConfigMap, []corev1.KeyToPath, error) {
	planDir := filepath.Dir(k.PlanFile)
	planName := filepath.Base(k.PlanFile)
	src, err := os.ReadFile(k.PlanFile)
	if err != nil {
		return nil, nil, err
	}
	if err := plainCredentials(p, k.PlanFile, src); err != nil { // k8ssecrets.go
		return nil, nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace, Labels: labels},
		Data:       map[string]string{"plan.yaml": string(src)},
	}
	items := []corev1.KeyToPath{{Key: "plan.yaml", Path: planName}}
	size := len(src)
	dataFiles := map[string]bool{}
	for _, ds := range p.Data {
		dataFiles[ds.File] = true
	}
	for i, f := range planFiles(p) {
		onClaim := k.DataPVC != "" && dataFiles[f]
		rel, err := relToPlan(planDir, f, onClaim)
		if err != nil {
			return nil, nil, err
		}
		if onClaim {
			// Read from the claim in the pod (checked there at start, as
			// a local run checks it); checked here already by the plan's
			// loading.
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		size += len(b)
		key := configKey(i, rel)
		putFile(cm, key, rel, b)
		items = append(items, corev1.KeyToPath{Key: key, Path: filepath.ToSlash(rel)})
	}
	if size > maxConfigMap {
		if k.DataPVC != "" {
			return nil, nil, fmt.Errorf("the plan and its TLS files are %d KiB, more than a ConfigMap holds (1 MiB)", size/1024)
		}
		return nil, nil, fmt.Errorf("the plan and its files are %d KiB, more than a ConfigMap holds (1 MiB): gzip the CSV files (.csv.gz), or put the data files on a PersistentVolumeClaim and pass --data-pvc CLAIM[:SUBPATH] (each segment then reads only its share of unique rows)", size/1024)
	}
	return cm, items, nil
}

// relToPlan is f's path relative to the plan's directory, the only one
// the pods see.
func relToPlan(planDir, f string, onClaim bool) (string, error) {
	rel, err := filepath.Rel(planDir, f)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
		return rel, nil
	}
	if onClaim {
		return "", fmt.Errorf("%s is outside the plan's directory %s: with --data-pvc the pods read each data file at its path relative to the plan, below %s; move the file beside the plan", f, planDir, DataMount)
	}
	return "", fmt.Errorf("%s is outside the plan's directory %s: the pods see only the plan's directory; move the file beside the plan (or bake it into the image)", f, planDir)
}

// putFile stores b under key: as text when it is, as binary data when it
// is compressed or not valid UTF-8.
func putFile(cm *corev1.ConfigMap, key, rel string, b []byte) {
	if strings.HasSuffix(strings.ToLower(rel), ".gz") || !isText(b) {
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		cm.BinaryData[key] = b
		return
	}
	cm.Data[key] = string(b)
}

// segmentContainer is the container that runs one segment, and the
// volumes it mounts.
func segmentContainer(k K8s, items []corev1.KeyToPath) (corev1.Container, []corev1.Volume, error) {
	args := k.segmentArgs()
	mounts, volumes := segmentVolumes(k, items)
	if k.DataPVC != "" {
		args = append(args, "--data-dir", DataMount)
	}
	container := corev1.Container{
		Name:  ContainerName,
		Image: k.Image,
		Args:  args,
		Env: append([]corev1.EnvVar{{
			// The Job controller sets this too; declaring it makes the
			// $(JOB_COMPLETION_INDEX) in args expand by construction.
			Name: "JOB_COMPLETION_INDEX",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}},
		}, {
			Name: TerminationEnv, Value: TerminationMessagePath,
		}}, k.levelEnv()...),
		VolumeMounts: mounts,
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
		// The segment writes its exact failure to the file; an image
		// that does not (an older stampede) still gets the log's tail.
		TerminationMessagePath:   TerminationMessagePath,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if k.PullPolicy != "" {
		container.ImagePullPolicy = corev1.PullPolicy(k.PullPolicy)
	}
	if k.EnvFromSecret != "" {
		container.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: k.EnvFromSecret}}}}
	}
	res, err := segmentResources(k)
	if err != nil {
		return container, nil, err
	}
	container.Resources = res
	return container, volumes, nil
}

// segmentVolumes mounts the plan's ConfigMap, a writable /tmp and, with
// --data-pvc, the data claim.
func segmentVolumes(k K8s, items []corev1.KeyToPath) ([]corev1.VolumeMount, []corev1.Volume) {
	mounts := []corev1.VolumeMount{
		{Name: "plan", MountPath: PlanMount, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}
	volumes := []corev1.Volume{
		{Name: "plan", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: k.Name},
			Items:                items,
		}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if k.DataPVC != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: "data", MountPath: DataMount, ReadOnly: true, SubPath: k.DataSubPath})
		// Read-only: N pods share the claim, which then needs an access
		// mode that allows that (ReadOnlyMany, or ReadWriteMany) unless
		// the pods land on one node. Any other volume source can replace
		// this one in the written manifest.
		volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: k.DataPVC, ReadOnly: true}}})
	}
	return mounts, volumes
}

// segmentResources requests and limits the CPU and memory given.
func segmentResources(k K8s) (corev1.ResourceRequirements, error) {
	if k.CPU == "" && k.Memory == "" {
		return corev1.ResourceRequirements{}, nil
	}
	rl := corev1.ResourceList{}
	if k.CPU != "" {
		q, err := resource.ParseQuantity(k.CPU)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("cpu %q: %v", k.CPU, err)
		}
		rl[corev1.ResourceCPU] = q
	}
	if k.Memory != "" {
		q, err := resource.ParseQuantity(k.Memory)
		if err != nil {
			return corev1.ResourceRequirements{}, fmt.Errorf("memory %q: %v", k.Memory, err)
		}
		rl[corev1.ResourceMemory] = q
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl}, nil
}

// segmentJob is the Indexed Job: one completion per segment, all running
// at once.
func segmentJob(p *plan.Plan, k K8s, labels map[string]string, container corev1.Container, volumes []corev1.Volume) *batchv1.Job {
	n := int32(k.Segments)
	// The Job may run until every pod could have started late and run the
	// whole plan; past that it is stuck, and the API server stops it.
	deadline := int64((k.StartAt.Sub(k.Now) + k.StartGrace + k.loadLasts(p) + p.Load.Grace + 10*time.Minute).Seconds())
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: k.Name, Namespace: k.Namespace, Labels: labels,
			Annotations: k.levelAnnotations(map[string]string{
				"stampede.io/plan":     filepath.Base(k.PlanFile),
				"stampede.io/segments": fmt.Sprint(k.Segments),
				"stampede.io/start-at": k.StartAt.UTC().Format(time.RFC3339Nano),
			})},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr(batchv1.IndexedCompletion),
			Completions:    ptr(n),
			Parallelism:    ptr(n),
			// A pod that never got to run (evicted or preempted before its
			// container started) may be replaced once; a replacement that
			// comes up after the start time plus grace refuses to run.
			BackoffLimitPerIndex: ptr(int32(1)),
			// Every segment runs to its end even if another failed: the
			// merged result is then partial and names the failed ones.
			MaxFailedIndexes:        nil,
			PodReplacementPolicy:    ptr(batchv1.Failed),
			PodFailurePolicy:        segmentFailurePolicy(),
			ActiveDeadlineSeconds:   ptr(max(deadline, 60)),
			TTLSecondsAfterFinished: ptr(int32(finishedTTL)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					// A load generator never talks to the API server.
					AutomountServiceAccountToken:  ptr(false),
					TerminationGracePeriodSeconds: ptr(int64(p.Load.Grace.Seconds()) + 10),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(65532)),
						RunAsGroup:     ptr(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{container},
					Volumes:    volumes,
				},
			},
		},
	}
}

// segmentFailurePolicy never retries a segment that ran, and replaces
// one disrupted before it could.
func segmentFailurePolicy() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{
			// Once stampede ran, its segment is never retried: it may
			// have sent part of its share, and a retry would send it
			// again, shifted in time. Its log still holds its
			// (partial) result.
			Action: batchv1.PodFailurePolicyActionFailIndex,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr(ContainerName),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpNotIn,
				Values:        []int32{0},
			},
		},
		{
			// Disrupted before the container ran: replace, without
			// counting against the per-index backoff.
			Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
			},
		},
	}}
}

func ptr[T any](v T) *T { return &v }

func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && strings.ToValidUTF8(string(b), "\uFFFD") == string(b)
}

// YAML renders the manifest as a multi-document YAML file for kubectl
// apply -f. Keys come out sorted, so the output is stable.
func (m *Manifest) YAML() ([]byte, error) {
	var b bytes.Buffer
	for i, obj := range []any{m.ConfigMap, m.Job} {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// ActiveDeadline is the Job's activeDeadlineSeconds: the Job controller
// fails the Job (DeadlineExceeded) that long after it started.
func (m *Manifest) ActiveDeadline() time.Duration {
	if d := m.Job.Spec.ActiveDeadlineSeconds; d != nil {
		return time.Duration(*d) * time.Second
	}
	return 0
}
