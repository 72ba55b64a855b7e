package podloop

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The scope of tidal's permissions in its namespace, tried with its own
// token: ConfigMaps by name only (not EKS's aws-auth, whose update would
// make anyone cluster-admin), and no Secret at all. What it needs is tried
// too, so that a broken token cannot pass for a narrow one.
func TestLeastPrivilegeScope(t *testing.T) {
	parallel(t)
	applyBase(t)
	ctx := context.Background()
	const ns = "kube-system"
	admin := cluster(t).Client.CoreV1()
	ensure(t, admin.ConfigMaps(ns).Create, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "aws-auth", Namespace: ns},
		Data: map[string]string{"mapRoles": "- rolearn: arn:aws:iam::111122223333:role/nodes\n  groups: [system:nodes]\n"}})
	ensure(t, admin.Secrets(ns).Create, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tidal-scope-test", Namespace: ns},
		StringData: map[string]string{"password": "hunter2"}})
	t.Cleanup(func() {
		_ = admin.ConfigMaps(ns).Delete(ctx, "aws-auth", metav1.DeleteOptions{})
		_ = admin.Secrets(ns).Delete(ctx, "tidal-scope-test", metav1.DeleteOptions{})
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", serviceAccountKubeconfig(t, ns, "tidal"))
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(cfg).CoreV1()
	byName := func(name string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	}
	awsAuth, err := admin.ConfigMaps(ns).Get(ctx, "aws-auth", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, err := admin.ConfigMaps(ns).Get(ctx, "tidal-status", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("deploy/ did not make the status ConfigMap: %v", err)
	}
	denied := map[string]func() error{
		"update aws-auth":      func() error { _, err := sa.ConfigMaps(ns).Update(ctx, awsAuth, metav1.UpdateOptions{}); return err },
		"get aws-auth":         func() error { _, err := sa.ConfigMaps(ns).Get(ctx, "aws-auth", metav1.GetOptions{}); return err },
		"list aws-auth":        func() error { _, err := sa.ConfigMaps(ns).List(ctx, byName("aws-auth")); return err },
		"watch aws-auth":       watchErr(func() (watch.Interface, error) { return sa.ConfigMaps(ns).Watch(ctx, byName("aws-auth")) }),
		"list every ConfigMap": func() error { _, err := sa.ConfigMaps(ns).List(ctx, metav1.ListOptions{}); return err },
		"create a ConfigMap": func() error {
			_, err := sa.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "aws-auth-2"}}, metav1.CreateOptions{})
			return err
		},
		"delete the status ConfigMap": func() error { return sa.ConfigMaps(ns).Delete(ctx, "tidal-status", metav1.DeleteOptions{}) },
		"get a Secret":                func() error { _, err := sa.Secrets(ns).Get(ctx, "tidal-scope-test", metav1.GetOptions{}); return err },
		"list Secrets":                func() error { _, err := sa.Secrets(ns).List(ctx, metav1.ListOptions{}); return err },
		"list Secrets everywhere":     func() error { _, err := sa.Secrets("").List(ctx, metav1.ListOptions{}); return err },
		"watch Secrets":               watchErr(func() (watch.Interface, error) { return sa.Secrets(ns).Watch(ctx, metav1.ListOptions{}) }),
		"create a Secret": func() error {
			_, err := sa.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tidal-scope-test-2"}}, metav1.CreateOptions{})
			return err
		},
	}
	for what, try := range denied {
		if err := try(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as tidal: %v, want Forbidden", what, err)
		}
	}
	allowed := map[string]func() error{
		"get the status ConfigMap":    func() error { _, err := sa.ConfigMaps(ns).Get(ctx, "tidal-status", metav1.GetOptions{}); return err },
		"update the status ConfigMap": func() error { _, err := sa.ConfigMaps(ns).Update(ctx, status, metav1.UpdateOptions{}); return err },
		"list the priority ConfigMap": func() error {
			_, err := sa.ConfigMaps(ns).List(ctx, byName("cluster-autoscaler-priority-expander"))
			return err
		},
		"watch the priority ConfigMap": watchErr(func() (watch.Interface, error) {
			return sa.ConfigMaps(ns).Watch(ctx, byName("tidal-priority-expander"))
		}),
	}
	for what, try := range allowed {
		if err := try(); err != nil {
			t.Errorf("%s as tidal: %v, want it allowed", what, err)
		}
	}
}

// ensure creates obj unless it exists.
func ensure[T any](t *testing.T, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	if _, err := create(context.Background(), obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// watchErr is the error of starting a watch; a started one is stopped.
func watchErr(start func() (watch.Interface, error)) func() error {
	return func() error {
		w, err := start()
		if err == nil {
			w.Stop()
		}
		return err
	}
}
