// Package interrupt decides what the node loop does when the cloud says
// instances go away on their own (a spot interruption, a rebalance
// recommendation, a scheduled change, an instance stopping or
// terminated): which nodes to mark at once (tainted, cordoned, annotated
// with what is coming and when), which marked nodes to drain and delete
// now, which of their pods to picture so replacement capacity is asked
// for in the same iteration, and which messages are acted on and may go.
// It is pure: interruptions, nodes and a time in, a decision out.
package interrupt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// Annotation, on a node, records that the cloud takes it away: the kind,
// the deadline and the message, as JSON (Mark). It is written with the
// ToBeDeleted taint and the cordon, so a restarted tidal drains and deletes
// the node although the message is gone.
const Annotation = "tidal.dev/interruption"

// Mark is what the annotation holds.
type Mark struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	// Deadline is when the node goes (zero: no deadline); Sent when the
	// cloud sent the event, Received when tidal read it.
	Deadline time.Time `json:"deadline,omitzero"`
	Sent     time.Time `json:"sent,omitzero"`
	Received time.Time `json:"received"`
	// Message is the id of the message that told.
	Message string `json:"message,omitempty"`
}

// Value is the annotation's value.
func (m Mark) Value() string {
	b, _ := json.Marshal(m)
	return string(b)
}

// MarkOf reads a node's annotation; found is false without one. An
// annotation that cannot be read is an error: the node is still marked
// (kind unknown, no deadline), since something took it away.
func MarkOf(n *corev1.Node) (m Mark, found bool, err error) {
	v, ok := n.Annotations[Annotation]
	if !ok {
		return Mark{}, false, nil
	}
	if err := json.Unmarshal([]byte(v), &m); err != nil || m.Kind == "" {
		return Mark{Kind: "unknown"}, true, fmt.Errorf("node %s: annotation %s=%q is not a mark tidal wrote", n.Name, Annotation, v)
	}
	return m, true, nil
}

// Node is a node as the decision needs it.
type Node struct {
	Name, ProviderID string
	// Group is its node group's ID ("" for a node of no group: not
	// tidal's to replace).
	Group string
	// Mark is its annotation, if it has one.
	Mark *Mark
	// Removing is true while a removal of the node is under way.
	Removing bool
}

// InstanceID is the last path element of a providerID: the instance id of
// aws:///<zone>/<id>.
func InstanceID(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// Input is what the decision reads.
type Input struct {
	// Interruptions are those received and not yet acted on.
	Interruptions []cloudprovider.Interruption
	Nodes         []Node
	Now           time.Time
}

// Action is a node to mark (if not marked yet) and to drain and delete.
type Action struct {
	Node, Group string
	Mark        Mark
	// New is true when the node is not marked yet (or its mark changes:
	// an earlier deadline came).
	New bool
}

// Decision is what to do.
type Decision struct {
	// Act are the nodes to mark and whose removal to start, sorted by
	// deadline (none last), then name.
	Act []Action
	// Nodes are, per interruption id, the nodes it concerns; an
	// interruption is acted on once each of them is marked. An
	// interruption of no node of a node group is acted on at once.
	Nodes map[string][]string
	// Foreign are, per interruption id, its instances that are no node of
	// a node group (for the log).
	Foreign map[string][]string
}

// Decide matches the interruptions to nodes by instance id, keeps the
// earliest deadline of a node told of twice, and adds the marked nodes no
// removal is under way for (a removal that failed, or a restart).
func Decide(in Input) Decision {
	byInstance := map[string]*Node{}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if n.Group != "" && n.ProviderID != "" {
			byInstance[InstanceID(n.ProviderID)] = n
		}
	}
	d := Decision{Nodes: map[string][]string{}, Foreign: map[string][]string{}}
	acts := map[string]*Action{}
	for _, it := range in.Interruptions {
		d.Nodes[it.ID] = []string{}
		for _, id := range it.Instances {
			n := byInstance[id]
			if n == nil {
				d.Foreign[it.ID] = append(d.Foreign[it.ID], id)
				continue
			}
			d.Nodes[it.ID] = append(d.Nodes[it.ID], n.Name)
			m := Mark{Kind: it.Kind, Detail: it.Detail, Deadline: it.Deadline, Sent: it.Time, Received: in.Now, Message: it.ID}
			if a := acts[n.Name]; a != nil {
				if sooner(m.Deadline, a.Mark.Deadline) {
					a.Mark = m
				}
				continue
			}
			a := &Action{Node: n.Name, Group: n.Group, Mark: m, New: true}
			if n.Mark != nil && !sooner(m.Deadline, n.Mark.Deadline) {
				a.Mark, a.New = *n.Mark, false
			}
			acts[n.Name] = a
		}
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if n.Mark != nil && n.Group != "" && acts[n.Name] == nil {
			acts[n.Name] = &Action{Node: n.Name, Group: n.Group, Mark: *n.Mark}
		}
	}
	for _, n := range in.Nodes {
		if a := acts[n.Name]; a != nil && (n.Removing && !a.New) {
			delete(acts, n.Name)
		}
	}
	for _, a := range acts {
		d.Act = append(d.Act, *a)
	}
	slices.SortFunc(d.Act, func(a, b Action) int {
		switch {
		case sooner(a.Mark.Deadline, b.Mark.Deadline):
			return -1
		case sooner(b.Mark.Deadline, a.Mark.Deadline):
			return 1
		}
		return strings.Compare(a.Node, b.Node)
	})
	return d
}

// sooner reports whether deadline a comes before b; a zero deadline is
// none, after every other.
func sooner(a, b time.Time) bool {
	switch {
	case a.IsZero():
		return false
	case b.IsZero():
		return true
	}
	return a.Before(b)
}

// Acted are the interruptions acted on: each node they concern is marked
// (not in failed).
func Acted(d Decision, failed map[string]error) []string {
	var out []string
	for id, nodes := range d.Nodes {
		if !slices.ContainsFunc(nodes, func(n string) bool { return failed[n] != nil }) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// EvictUntil is until when evictions a PodDisruptionBudget refuses are
// tried again: maxEvictionTime from now, but never past the deadline,
// when the node goes whatever its pods do.
func EvictUntil(m Mark, now time.Time, maxEvictionTime time.Duration) time.Time {
	until := now.Add(maxEvictionTime)
	if !m.Deadline.IsZero() && m.Deadline.Before(until) {
		return m.Deadline
	}
	return until
}

// Replaced are the pods of a node being taken away that come back
// elsewhere once evicted (a controller recreates them): the node loop
// pictures them, so capacity for them is asked for before they are
// evicted. DaemonSet, mirror and finished pods are left out.
func Replaced(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if metav1.GetControllerOfNoCopy(p) == nil || scaledown.IsDaemonSetPod(p) || scaledown.IsTerminal(p) || scaledown.IsMirror(p) ||
			p.DeletionTimestamp != nil {
			continue
		}
		out = append(out, p)
	}
	return out
}
