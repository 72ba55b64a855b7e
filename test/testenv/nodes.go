package testenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// FollowNodes feeds f every change of the nodes nodeSelector selects, the
// existing ones first as Added events, until the test ends. A test that
// must see a state that may last only a moment (a taint taken off and put
// back) follows the nodes instead of polling them.
func FollowNodes(t *testing.T, cs kubernetes.Interface, nodeSelector string, f func(watch.Event)) {
	t.Helper()
	nodes := cs.CoreV1().Nodes()
	follow(t, func(ctx context.Context, o metav1.ListOptions) (string, []watch.Event, error) {
		o.LabelSelector = nodeSelector
		list, err := nodes.List(ctx, o)
		if err != nil {
			return "", nil, err
		}
		return list.ResourceVersion, added(list.Items), nil
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = nodeSelector
		return nodes.Watch(ctx, o)
	}, f)
}
