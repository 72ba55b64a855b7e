package benchgen

import "strconv"

// appendPadded appends v in decimal, left-padded with zeros to width digits
// (like fmt's %0<width>d for v >= 0).
func appendPadded(b []byte, v int, width int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(v), 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// padded returns prefix followed by v padded to width digits.
func padded(prefix string, v, width int) string {
	b := make([]byte, 0, len(prefix)+width+4)
	b = append(b, prefix...)
	return string(appendPadded(b, v, width))
}

// padded2 returns prefix, v1 padded to w1, "-", v2 padded to w2.
func padded2(prefix string, v1, w1, v2, w2 int) string {
	b := make([]byte, 0, len(prefix)+w1+w2+8)
	b = append(b, prefix...)
	b = appendPadded(b, v1, w1)
	b = append(b, '-')
	return string(appendPadded(b, v2, w2))
}

// Object names of the spec.
func nodeGroupID(k int) string      { return padded("ng-", k, 2) }
func nodeName(j int) string         { return padded("node-", j, 5) }
func templateName(id string) string { return "template-node-for-" + id }
func runningApp(a int) string       { return padded("run-", a, 3) }
func pendingApp(g int) string       { return padded("pend-", g, 3) }
func runningPodName(j, q int) string {
	return padded2("run-", j, 5, q, 3)
}
func pendingPodName(g, x int) string {
	return padded2("pend-", g, 3, x, 5)
}

// rsName returns the name of the ReplicaSet that owns the pods of app.
func rsName(app string) string { return "rs-" + app }
