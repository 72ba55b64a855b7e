package act

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A removal reads the pods nominated to its node again from the API server
// once the node is tainted: a pending pod nominated there stops it (the
// scheduler would bind it there), as does a read that fails; a pod bound,
// terminating or nominated elsewhere does not.
func TestRemovalChecksThePodsNominatedToItsNode(t *testing.T) {
	pod := func(name, nominated, bound string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: bound}, Status: corev1.PodStatus{NominatedNodeName: nominated}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{}
			p.Finalizers = []string{"test"}
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		pods     []runtime.Object
		listFail bool
		wantErr  bool
	}{
		{name: "no pod"},
		{name: "a pending pod nominated to the node", pods: []runtime.Object{pod("a", "n1", "", false)}, wantErr: true},
		{name: "a pod nominated to the node and bound", pods: []runtime.Object{pod("a", "n1", "n2", false)}},
		{name: "a terminating pod nominated to the node", pods: []runtime.Object{pod("a", "n1", "", true)}},
		{name: "a pod nominated to another node", pods: []runtime.Object{pod("a", "n2", "", false)}},
		{name: "the read fails", listFail: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.pods...)
			if tc.listFail {
				client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("etcdserver: request timed out")
				})
			}
			a := NewLive(testDeps(t, client))
			if err := a.checkNominated(context.Background(), "n1"); (err != nil) != tc.wantErr {
				t.Fatalf("check: %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}
