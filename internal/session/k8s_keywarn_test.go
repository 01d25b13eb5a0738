package session

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/plan"
)

// A plan's client key goes into the ConfigMap with its other files: the
// k8s command says so. Before, it said nothing of a private key left
// readable by the namespace.
func TestK8sWarnsOfTheClientKeyInTheConfigMap(t *testing.T) {
	m := &dist.Manifest{ConfigMap: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stampede-x", Namespace: "load"}}}
	var w bytes.Buffer
	warnKeyInConfigMap(&w, &plan.Plan{TLS: plan.TLS{CertFile: "client.crt", KeyFile: "client.key"}}, m)
	if got := w.String(); !strings.Contains(got, "client key client.key goes into the ConfigMap stampede-x") || !strings.Contains(got, "(load)") {
		t.Errorf("warning %q", got)
	}
	w.Reset()
	warnKeyInConfigMap(&w, &plan.Plan{}, m)
	if w.Len() != 0 {
		t.Errorf("a plan without a client key warned: %q", w.String())
	}
}
