package simulator

import "testing"

// TestPrintMemoIsTheFingerprint checks that a memoized fingerprint is the
// one made afresh after each kind of change: a pod added or gone, a new
// Node object (another allocatable, or the same content), a pod's labels,
// a fork reverted and settled.
func TestPrintMemoIsTheFingerprint(t *testing.T) {
	s := NewSnapshot()
	for _, n := range []string{"a", "b"} {
		if _, err := s.AddNode(testNode(n, "8", "z")); err != nil {
			t.Fatal(err)
		}
	}
	p := testPod("web", "1")
	memo := PrintMemo{}
	steps := []struct {
		name   string
		change func() error
	}{
		{"first", func() error { return nil }},
		{"pod added", func() error { return s.AddPod(info(p), "a") }},
		{"pod gone", func() error { return s.RemovePod(p, "a") }},
		{"new node object, more cpu", func() error {
			n := testNode("b", "16", "z")
			s.NodeInfo("b").SetNode(n)
			s.Touch()
			return nil
		}},
		{"new node object, same content", func() error {
			s.NodeInfo("b").SetNode(s.NodeInfo("b").Node().DeepCopy())
			s.Touch()
			return nil
		}},
		{"pod label changed", func() error {
			if err := s.AddPod(info(p), "b"); err != nil {
				return err
			}
			if err := s.RemovePod(p, "b"); err != nil {
				return err
			}
			q := p.DeepCopy()
			q.Labels["app"] = "other"
			return s.AddPod(info(q), "b")
		}},
		{"fork reverted and settled", func() error {
			s.Fork()
			if err := s.AddPod(info(testPod("x", "2")), "a"); err != nil {
				return err
			}
			s.Revert()
			memo.Settle(s)
			return nil
		}},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		next := PrintMemo{}
		for _, ni := range s.Infos() {
			if got, want := next.Print(memo, ni), NodePrint(ni); got != want {
				t.Errorf("%s: node %s memoized %x, afresh %x", st.name, ni.Node().Name, got, want)
			}
		}
		memo = next
	}
}
