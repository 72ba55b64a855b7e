package hpa

import v1 "k8s.io/api/core/v1"

// PlainReplicas proposes a replica count for an average-value target over
// pods: a Resource or ContainerResource metric with an AverageValue target
// (resource is its name; readiness rules apply to cpu only), or a Pods metric
// (resource is "").
//
// The average is an integer milli-value: sum/samples, where the samples are
// the ready pods plus any entries for pods that are not listed. It is what
// status reports. The decision follows the utilization path, except that
// missing pods are assumed to sit exactly at the target on a scale-down.
func PlainReplicas(in PodInput, resource v1.ResourceName, target int64) (Proposal, error) {
	s, err := groupForCalc(in, resource)
	if err != nil {
		return Proposal{}, err
	}
	sum := sumSamples(in, s)
	counted := s.ready + s.extraneous
	avg := sum / int64(counted)
	ratio := float64(avg) / float64(target)
	p := Proposal{Value: avg}
	if !needsFoldBack(s, ratio) {
		p.Replicas = withinOrCeil(in.CurrentReplicas, ratio, s.ready, in.Tolerances)
		return p, nil
	}
	switch {
	case s.missing > 0 && ratio < 1.0:
		sum += target * int64(s.missing)
		counted += s.missing
	case s.missing > 0 && ratio > 1.0:
		counted += s.missing
	}
	if s.unready > 0 && ratio > 1.0 {
		counted += s.unready
	}
	newRatio := float64(sum/int64(counted)) / float64(target)
	p.Replicas = foldBackDecision(in.CurrentReplicas, ratio, newRatio, counted, in.Tolerances)
	return p, nil
}

// sumSamples sums the samples that survive grouping: those of ready pods and
// those naming no listed pod. Integer overflow wraps exactly as a direct sum
// over the surviving samples would.
func sumSamples(in PodInput, s podSet) int64 {
	var ready, listed int64
	for i, pod := range in.Pods {
		if s.class[i]&hasMetric == 0 {
			continue
		}
		v := in.Metrics[pod.Name].Value
		listed += v
		if s.is(i, classReady) {
			ready += v
		}
	}
	if s.extraneous == 0 {
		return ready
	}
	var all int64
	for _, m := range in.Metrics {
		all += m.Value
	}
	return ready + (all - listed)
}
