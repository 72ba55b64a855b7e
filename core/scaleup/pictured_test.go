package scaleup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func webPictured() Pictured {
	return Pictured{Kind: "Deployment", Namespace: "ns", Name: "web", Template: &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Priority: ptr.To[int32](5), Containers: []corev1.Container{{Name: "c"}}}}}
}

func TestPicturePods(t *testing.T) {
	w := webPictured()
	pods := PicturePods(w, "headroom", 2, HeadroomOfAnnotation, "Deployment ns/web", ptr.To[int32](-10))
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for i, p := range pods {
		if want := fmt.Sprintf("web-headroom-%d", i); p.Name != want || p.Namespace != "ns" {
			t.Errorf("pod %d named %s/%s, want ns/%s", i, p.Namespace, p.Name, want)
		}
		if want := fmt.Sprintf("tidal-headroom/Deployment/ns/web/%d", i); string(p.UID) != want {
			t.Errorf("pod %d UID %s, want the stable %s", i, p.UID, want)
		}
		if !IsPictured(p) || p.Labels["app"] != "web" || *p.Spec.Priority != -10 {
			t.Errorf("pod %d: pictured %v, labels %v, priority %d; want pictured, the template's labels, priority -10",
				i, IsPictured(p), p.Labels, *p.Spec.Priority)
		}
	}
	pods[0].Labels["app"] = "changed"
	if w.Template.Labels["app"] != "web" || *w.Template.Spec.Priority != 5 {
		t.Fatal("a pictured pod shares its template's maps or priority")
	}
	if ahead := PicturePods(w, "ahead", 1, AheadOfAnnotation, "x", nil); *ahead[0].Spec.Priority != 5 {
		t.Fatalf("without a priority of its own the pod has %d, want the template's 5", *ahead[0].Spec.Priority)
	}
}

func TestAheadPods(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exp := func(replicas, existing int32, expires time.Duration, satisfied bool) Expectation {
		return Expectation{Workload: webPictured(), Replicas: replicas, Existing: existing, Source: "PodAutoscaler ns/web",
			Expires: now.Add(expires), Satisfied: satisfied}
	}
	tests := []struct {
		name               string
		exps               map[string]Expectation
		pods               int
		expired, satisfied string
	}{
		{"only the missing pods", map[string]Expectation{"w": exp(8, 2, time.Minute, false)}, 6, "", ""},
		{"all exist: satisfied", map[string]Expectation{"w": exp(3, 3, time.Minute, false)}, 0, "", "w"},
		{"more exist than asked: satisfied", map[string]Expectation{"w": exp(3, 5, time.Minute, false)}, 0, "", "w"},
		{"satisfied stays quiet until it expires", map[string]Expectation{"w": exp(8, 0, time.Minute, true)}, 0, "", ""},
		{"expired is forgotten", map[string]Expectation{"w": exp(8, 2, -time.Second, false), "v": exp(2, 0, time.Minute, false)},
			2, "w", ""},
		{"at the expiry still counts", map[string]Expectation{"w": exp(1, 0, 0, false)}, 1, "", ""},
	}
	for _, tc := range tests {
		got := AheadPods(tc.exps, now)
		if len(got.Pods) != tc.pods || strings.Join(got.Expired, ",") != tc.expired || strings.Join(got.Satisfied, ",") != tc.satisfied {
			t.Errorf("%s: %d pods, expired %v, satisfied %v; want %d, [%s], [%s]", tc.name, len(got.Pods), got.Expired,
				got.Satisfied, tc.pods, tc.expired, tc.satisfied)
		}
		for _, p := range got.Pods {
			if p.Annotations[AheadOfAnnotation] != "PodAutoscaler ns/web" {
				t.Errorf("%s: pod %s annotated %v, want its source", tc.name, p.Name, p.Annotations)
			}
		}
	}
}

func TestParseHeadroom(t *testing.T) {
	tests := []struct {
		raw  string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"3", 3, true}, {"1000", 1000, true},
		{"1001", 0, false}, {"-1", 0, false}, {"two", 0, false}, {"", 0, false}, {"2.5", 0, false},
	}
	for _, tc := range tests {
		n, err := ParseHeadroom(tc.raw)
		if n != tc.want || (err == nil) != tc.ok {
			t.Errorf("%q: %d, %v; want %d, ok %v", tc.raw, n, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), HeadroomAnnotation) {
			t.Errorf("%q: message %q does not name the annotation", tc.raw, err)
		}
	}
}
