package trim_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/trim"
)

// renameTokenVolume gives the pod's ServiceAccount token volume and its
// mounts the name name.
func renameTokenVolume(p *corev1.Pod, name string) {
	old := ""
	for i, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, benchgen.ServiceAccountVolumePrefix) {
			old = v.Name
			p.Spec.Volumes[i].Name = name
		}
	}
	for _, ctrs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range ctrs {
			for k := range ctrs[i].VolumeMounts {
				if ctrs[i].VolumeMounts[k].Name == old {
					ctrs[i].VolumeMounts[k].Name = name
				}
			}
		}
	}
}

// storedS1 is S1 as the API server stores it, every object passed to
// transform.
func storedS1(t *testing.T, transform func(any) (any, error)) *benchgen.Cluster {
	t.Helper()
	c := benchgen.Generate(benchgen.S1())
	if err := c.Store(benchgen.StoreOptions{Transform: transform}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSharerSharesReplicas checks that replicas share their spec parts,
// labels and owners once shared, and that every pod is still the trimmed
// pod, field for field.
func TestSharerSharesReplicas(t *testing.T) {
	trimmed := storedS1(t, trim.Object)
	shared := storedS1(t, trim.NewSharer().Transform)
	for i, p := range shared.RunningPods {
		if !apiequality.Semantic.DeepEqual(p, trimmed.RunningPods[i]) {
			t.Fatalf("shared pod %s differs from the trimmed one:\n%s", p.Name, diff.Diff(trimmed.RunningPods[i], p))
		}
	}
	a, b := replicas(t, shared.RunningPods)
	same := map[string]bool{
		"containers":      unsafe.SliceData(a.Spec.Containers) == unsafe.SliceData(b.Spec.Containers),
		"volumes":         unsafe.SliceData(a.Spec.Volumes) == unsafe.SliceData(b.Spec.Volumes),
		"tolerations":     unsafe.SliceData(a.Spec.Tolerations) == unsafe.SliceData(b.Spec.Tolerations),
		"securityContext": a.Spec.SecurityContext == b.Spec.SecurityContext,
		"owners":          unsafe.SliceData(a.OwnerReferences) == unsafe.SliceData(b.OwnerReferences),
		"labels":          mapData(a.Labels) == mapData(b.Labels),
	}
	for part, ok := range same {
		if !ok {
			t.Errorf("pods %s and %s do not share their %s", a.Name, b.Name, part)
		}
	}
	if a.Spec.NodeName == b.Spec.NodeName || a.Name == b.Name || a.UID == b.UID {
		t.Errorf("pods %s and %s lost what is their own", a.Name, b.Name)
	}
}

// replicas returns two pods of one ReplicaSet with the same spec, on
// different nodes (the generator gives pods on tainted nodes a toleration,
// and draws their requests).
func replicas(t *testing.T, pods []*corev1.Pod) (*corev1.Pod, *corev1.Pod) {
	t.Helper()
	first := map[string]*corev1.Pod{}
	for _, p := range pods {
		spec := p.Spec.DeepCopy()
		spec.NodeName = ""
		raw, err := spec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		key := string(p.OwnerReferences[0].UID) + string(raw)
		if a := first[key]; a != nil && a.Spec.NodeName != p.Spec.NodeName {
			return a, p
		}
		first[key] = p
	}
	t.Fatal("no two replicas with the same requests")
	return nil, nil
}

// mapData is the address of a map's data, equal for two references to one
// map.
func mapData(m map[string]string) uintptr { return *(*uintptr)(unsafe.Pointer(&m)) }

// TestSharerForgetsGonePods checks that the Sharer's tables do not outlive
// the pods that share their entries: a cache of a cluster whose pods come
// and go holds no more than its live pods' distinct parts.
func TestSharerForgetsGonePods(t *testing.T) {
	s := trim.NewSharer()
	c := storedS1(t, s.Transform)
	if s.Len() == 0 {
		t.Fatal("no entry after sharing S1")
	}
	first := c.RunningPods[0].DeepCopy()
	c = nil
	waitForLen(t, s, 0)

	// A pod alike the gone ones is shared afresh, and its entries are
	// forgotten in turn.
	again, err := s.Transform(first)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(again, first) || s.Len() != 3 {
		t.Errorf("pod changed (%v) or %d entries after sharing it, want 3", !apiequality.Semantic.DeepEqual(again, first), s.Len())
	}
	runtime.KeepAlive(again)
	again, first = nil, nil
	waitForLen(t, s, 0)
}

// waitForLen collects garbage until the Sharer's cleanups brought it to n
// entries.
func waitForLen(t *testing.T, s *trim.Sharer, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries after the pods went, want %d", s.Len(), n)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTokenVolumeCanonical checks that the ServiceAccount admission's
// token volume and its mounts get the canonical name, and that no other
// volume does.
func TestTokenVolumeCanonical(t *testing.T) {
	stored := storedS1(t, nil).RunningPods[0]
	admitted := stored.Spec.Volumes[0].Name
	sidecar := stored.Spec.Containers[0].DeepCopy()
	sidecar.Name = "init"
	stored.Spec.InitContainers = []corev1.Container{*sidecar}

	p := stored.DeepCopy()
	trim.Pod(p)
	mounts := append(p.Spec.InitContainers[0].VolumeMounts, p.Spec.Containers[0].VolumeMounts...)
	if p.Spec.Volumes[0].Name != trim.TokenVolumeName || len(mounts) != 2 ||
		mounts[0].Name != trim.TokenVolumeName || mounts[1].Name != trim.TokenVolumeName {
		t.Errorf("token volume %s: volume %q, mounts %+v", admitted, p.Spec.Volumes[0].Name, mounts)
	}

	for name, change := range map[string]func(*corev1.Pod){
		"an emptyDir with the admission's name": func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		},
		"a projection without a token": func(p *corev1.Pod) { p.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken = nil },
		"a longer suffix":              func(p *corev1.Pod) { renameTokenVolume(p, admitted+"x") },
		"the canonical name taken": func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: trim.TokenVolumeName,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		},
	} {
		p := stored.DeepCopy()
		change(p)
		want := p.Spec.Volumes[0].Name
		trim.Pod(p)
		if p.Spec.Volumes[0].Name != want || p.Spec.Containers[0].VolumeMounts[0].Name != want {
			t.Errorf("%s: renamed %s to %s", name, want, p.Spec.Volumes[0].Name)
		}
	}
}

// TestDecodedPodKeepsNoSpareRoom checks that a pod decoded as a reflector
// decodes it keeps no array larger than what is left in it: the decoder
// gives a pod's five conditions an array of eight.
func TestDecodedPodKeepsNoSpareRoom(t *testing.T) {
	stored := storedS1(t, nil).RunningPods[0]
	wire := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	var buf bytes.Buffer
	if err := wire.Encode(stored, &buf); err != nil {
		t.Fatal(err)
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	obj, _, err := wire.Decode(buf.Bytes(), &gvk, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := obj.(*corev1.Pod)
	if cap(p.Status.Conditions) == len(stored.Status.Conditions) {
		t.Fatalf("decoded conditions have no room to spare (cap %d): the test checks nothing", cap(p.Status.Conditions))
	}
	trim.Pod(p)
	if c := p.Status.Conditions; len(c) != 1 || cap(c) != len(c) || c[0].Type != corev1.PodReady {
		t.Errorf("trimmed conditions %+v: len %d, cap %d; want Ready alone, cap 1", c, len(c), cap(c))
	}
}
