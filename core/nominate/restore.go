package nominate

import "k8s.io/apimachinery/pkg/types"

// Restore says whether to set again, at once and without a decision, the
// nomination of pod uid that the scheduler just cleared from node cleared.
// The scheduler clears the nomination of every pod it tries and finds no
// node for, which it does each time a node registers or loses a taint:
// while a planned node still starts, its pods lose their nominations again
// and again, and until they are set again the room they were planned
// holds nothing for them. A node becoming ready then may take other pods
// in their stead. The nomination is set again when it is tidal's standing
// one to that node, the pod is still pending with no nomination, and the
// node is still starting (cleared from a node that can take pods, it says
// the pod was tried there and did not fit: the next decision places it).
func Restore(standing State, uid types.UID, p Pod, cleared string, starting bool) (Change, bool) {
	n, ok := standing[uid]
	if !ok || !starting || n.Node != cleared || p.Node != "" || p.Nominated != "" {
		return Change{}, false
	}
	return Change{UID: uid, Namespace: p.Namespace, Name: p.Name, Node: n.Node}, true
}
