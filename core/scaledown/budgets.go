package scaledown

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PDBBudgets tracks how many more pods each PDB lets go in a plan.
type PDBBudgets struct {
	pdbs      []*policyv1.PodDisruptionBudget
	selectors []labels.Selector
	remaining []int32
}

// NewPDBBudgets starts from each PDB's disruptions allowed.
func NewPDBBudgets(pdbs []*policyv1.PodDisruptionBudget) *PDBBudgets {
	b := &PDBBudgets{}
	for _, pdb := range sortedPDBs(pdbs) {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			// A PDB whose selector cannot be read protects nothing
			// predictably: treat it as matching nothing, as the
			// eviction API will still enforce it.
			sel = labels.Nothing()
		}
		b.pdbs = append(b.pdbs, pdb)
		b.selectors = append(b.selectors, sel)
		b.remaining = append(b.remaining, pdb.Status.DisruptionsAllowed)
	}
	return b
}

func (b *PDBBudgets) matches(i int, p *corev1.Pod) bool {
	return b.pdbs[i].Namespace == p.Namespace && b.selectors[i].Matches(labels.Set(p.Labels))
}

// Covered tells whether a PDB covers p.
func (b *PDBBudgets) Covered(p *corev1.Pod) bool {
	for i := range b.pdbs {
		if b.matches(i, p) {
			return true
		}
	}
	return false
}

// Reserve takes one disruption per pod from each PDB that covers it, or,
// when a PDB has too few left, takes nothing and names the pod.
func (b *PDBBudgets) Reserve(pods []*corev1.Pod) *Blocker {
	need := make([]int32, len(b.pdbs))
	for _, p := range pods {
		for i := range b.pdbs {
			if b.matches(i, p) {
				need[i]++
				if need[i] > b.remaining[i] {
					return &Blocker{Pod: p, Reason: NotEnoughPdb, Detail: fmt.Sprintf("PodDisruptionBudget %s allows %d more disruption(s)",
						b.pdbs[i].Name, b.remaining[i])}
				}
			}
		}
	}
	for i, n := range need {
		b.remaining[i] -= n
	}
	return nil
}

// Release gives back what Reserve took for pods.
func (b *PDBBudgets) Release(pods []*corev1.Pod) {
	for _, p := range pods {
		for i := range b.pdbs {
			if b.matches(i, p) {
				b.remaining[i]++
			}
		}
	}
}
