// Package simulator answers what-if scheduling questions with the
// kube-scheduler's own plugins: would this pod fit on that node, on a new
// node of that group, on the cluster after some change.
//
// A Snapshot holds nodes and their pods as scheduler NodeInfos, with cheap
// Fork/Revert. A Checker runs the default profile's PreFilter and Filter
// plugins against it. Pods that schedule the same are grouped
// (EquivalenceKeys), so one PreFilter and one Filter per node serve a whole
// group; a cheap resource pre-check skips nodes that are surely full, and a
// cursor resumes where the group's last pod fitted. Pod affinity is only
// evaluated when some pod uses it: the InterPodAffinity plugin skips itself
// otherwise, and CatchUp brings a group's affinity and spread state up to
// date incrementally instead of running PreFilter over every pod again.
// A pod's own required affinity terms are matched only against the pods on
// the nodes that hold pods they may select, found in an index of the
// snapshot's pods by the label keys the terms ask for.
//
// What the plugins read besides the snapshot (namespaces, volumes, storage
// classes, CSI objects) comes through Listers, with a version that changes
// with those objects; nil serves none. Package factorylisters serves them
// from a shared informer factory, checkertest builds a snapshot and checker
// for tests.
package simulator
