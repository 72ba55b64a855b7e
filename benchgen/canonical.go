package benchgen

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// canonicalWriter builds canonical lines in a reusable buffer.
type canonicalWriter struct {
	w   *bufio.Writer
	buf []byte
}

// WriteCanonical writes the canonical listing of the spec: a header, then one
// line per node group, node, running pod, pending group and pending pod. The
// values come from the generated objects (and NodeUtil, PendingGroups), so
// the listing also checks that the objects are as specified.
func (c *Cluster) WriteCanonical(w io.Writer) error {
	cw := &canonicalWriter{w: bufio.NewWriterSize(w, 64<<10), buf: make([]byte, 0, 128)}
	if _, err := cw.w.WriteString(c.Params.header()); err != nil {
		return err
	}
	for i := range c.NodeGroups {
		cw.nodeGroup(&c.NodeGroups[i])
	}
	for j, n := range c.Nodes {
		cw.node(n, c.NodeUtil[j])
	}
	for _, p := range c.RunningPods {
		cw.runningPod(p)
	}
	for i := range c.PendingGroups {
		cw.pendingGroup(&c.PendingGroups[i])
	}
	for _, p := range c.PendingPods {
		cw.pendingPod(p)
	}
	return cw.w.Flush()
}

// CanonicalSHA256 returns the hex SHA-256 of the canonical listing.
func (c *Cluster) CanonicalSHA256() string {
	h := sha256.New()
	_ = c.WriteCanonical(h) // a hash never fails to write
	return hex.EncodeToString(h.Sum(nil))
}

// header returns the first line of the canonical listing.
func (p Params) header() string {
	return fmt.Sprintf("# cabench-gen v1 seed=%d N=%d M=%d P=%d G=%d K=%d "+
		"under=%d:%d-%d busy=%d-%d jitter=%d apps=%d ngmax=%d\n",
		p.Seed, p.N, p.M, p.P, p.G, p.K, p.UnderPct, p.UnderMin, p.UnderMax,
		p.BusyMin, p.BusyMax, p.Jitter, p.Apps, p.NGMax)
}

// nodeGroup writes "NG <id> cpu= memMi= pods= zone= taint= size= min= max=".
func (cw *canonicalWriter) nodeGroup(g *NodeGroup) {
	alloc := g.Template.Status.Allocatable
	b := append(cw.buf[:0], "NG "...)
	b = append(b, g.ID...)
	b = appendField(b, " cpu=", alloc.Cpu().MilliValue())
	b = appendField(b, " memMi=", alloc.Memory().Value()/mebibyte)
	b = appendField(b, " pods=", alloc.Pods().Value())
	b = append(append(b, " zone="...), g.Zone...)
	b = appendField(b, " taint=", boolInt(g.Taint != nil))
	b = appendField(b, " size=", int64(g.TargetSize))
	b = appendField(b, " min=", int64(g.MinSize))
	b = appendField(b, " max=", int64(g.MaxSize))
	cw.line(b)
}

// node writes "N <name> ng=<group> util=<u>".
func (cw *canonicalWriter) node(n *corev1.Node, util int) {
	b := append(cw.buf[:0], "N "...)
	b = append(b, n.Name...)
	b = append(append(b, " ng="...), n.Labels[LabelNodeGroup]...)
	b = appendField(b, " util=", int64(util))
	cw.line(b)
}

// runningPod writes "R <name> node= cpu= memMi= rs= tol=".
func (cw *canonicalWriter) runningPod(p *corev1.Pod) {
	cpu, mem := podRequests(p)
	b := append(cw.buf[:0], "R "...)
	b = append(b, p.Name...)
	b = append(append(b, " node="...), p.Spec.NodeName...)
	b = appendField(b, " cpu=", cpu)
	b = appendField(b, " memMi=", mem)
	b = append(append(b, " rs="...), ownerName(p)...)
	b = appendField(b, " tol=", boolInt(len(p.Spec.Tolerations) > 0))
	cw.line(b)
}

// pendingGroup writes "PG <ggg> n= cpu= memMi= zone= tol= aa=".
func (cw *canonicalWriter) pendingGroup(g *PendingGroup) {
	zone := g.Zone
	if zone == "" {
		zone = "-"
	}
	b := appendPadded(append(cw.buf[:0], "PG "...), g.Index, 3)
	b = appendField(b, " n=", int64(g.Count))
	b = appendField(b, " cpu=", g.CPUMilli)
	b = appendField(b, " memMi=", g.MemoryMi)
	b = append(append(b, " zone="...), zone...)
	b = appendField(b, " tol=", boolInt(g.Toleration))
	b = appendField(b, " aa=", boolInt(g.AntiAffinity))
	cw.line(b)
}

// pendingPod writes "P <name> rs=<owner>".
func (cw *canonicalWriter) pendingPod(p *corev1.Pod) {
	b := append(cw.buf[:0], "P "...)
	b = append(b, p.Name...)
	b = append(append(b, " rs="...), ownerName(p)...)
	cw.line(b)
}

// line terminates b with a newline, writes it and keeps the buffer. Write
// errors are sticky in bufio.Writer and reported by Flush.
func (cw *canonicalWriter) line(b []byte) {
	b = append(b, '\n')
	_, _ = cw.w.Write(b)
	cw.buf = b
}

// appendField appends name followed by v in decimal.
func appendField(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(b, name...), v, 10)
}

// boolInt returns 1 for true and 0 for false.
func boolInt(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

// podRequests returns the cpu (millicores) and memory (MiB) requests of the
// first container of p, or zeros when p has no container.
func podRequests(p *corev1.Pod) (cpuMilli, memMi int64) {
	if len(p.Spec.Containers) == 0 {
		return 0, 0
	}
	req := p.Spec.Containers[0].Resources.Requests
	return req.Cpu().MilliValue(), req.Memory().Value() / mebibyte
}

// ownerName returns the name of the first owner of p, or "-" when none.
func ownerName(p *corev1.Pod) string {
	if len(p.OwnerReferences) == 0 {
		return "-"
	}
	return p.OwnerReferences[0].Name
}
