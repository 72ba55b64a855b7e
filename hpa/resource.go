package hpa

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

const errNoMatchingRequests = constError("no metrics returned matched known pods")

// ResourceUtilizationReplicas proposes a replica count for a Resource or
// ContainerResource metric with a Utilization target (whole percent of the
// request). Samples are per pod (for ContainerResource, the named container's
// usage); container selects whose request counts ("" for the whole pod).
//
// Utilization is sum(usage)*100/sum(request) over the ready pods, truncated to
// a whole percent, and is what status reports, with the raw average usage.
// With no missing pods and no unready pods on a scale-up the answer is
// ceil(ratio*ready pods). Otherwise missing pods are assumed to use
// max(100%, target) of their request on a scale-down and 0 on a scale-up,
// unready pods 0 on a scale-up, and the adjusted ratio decides (see
// foldBackDecision), multiplying by every pod that took part.
func ResourceUtilizationReplicas(in PodInput, resource v1.ResourceName, container string, target int32) (Proposal, error) {
	s, err := groupForCalc(in, resource)
	if err != nil {
		return Proposal{}, err
	}
	requests, err := Requests(in.Pods, container, resource)
	if err != nil {
		return Proposal{}, err
	}
	usage, request := sumReady(in, s, requests)
	if request == 0 {
		return Proposal{}, errNoMatchingRequests
	}
	p := Proposal{
		Utilization: int32(usage * 100 / request),
		Value:       usage / int64(s.ready),
	}
	ratio := float64(p.Utilization) / float64(target)
	if !needsFoldBack(s, ratio) {
		p.Replicas = withinOrCeil(in.CurrentReplicas, ratio, s.ready, in.Tolerances)
		return p, nil
	}
	newRatio, counted, err := foldBackUtilization(in, s, requests, usage, request, ratio, target)
	if err != nil {
		return Proposal{}, err
	}
	p.Replicas = foldBackDecision(in.CurrentReplicas, ratio, newRatio, counted, in.Tolerances)
	return p, nil
}

// sumReady sums the samples and requests of the ready pods.
func sumReady(in PodInput, s podSet, requests []int64) (usage, request int64) {
	for i, pod := range in.Pods {
		if s.is(i, classReady) {
			usage += in.Metrics[pod.Name].Value
			request += requests[i]
		}
	}
	return usage, request
}

// foldBackUtilization adds the assumed usage of missing and unready pods and
// returns the new ratio and the number of samples it rests on.
func foldBackUtilization(in PodInput, s podSet, requests []int64, usage, request int64, ratio float64, target int32) (float64, int, error) {
	counted := s.ready + s.extraneous
	fallback := int64(max(100, target))
	for i := range in.Pods {
		switch {
		case s.is(i, classMissing) && ratio < 1.0:
			usage += requests[i] * fallback / 100
		case s.is(i, classMissing) && ratio > 1.0:
		case s.is(i, classUnready) && ratio > 1.0:
		default:
			continue
		}
		request += requests[i]
		counted++
	}
	if request == 0 {
		return 0, 0, fmt.Errorf("recomputing utilization: %w", errNoMatchingRequests)
	}
	return float64(int32(usage*100/request)) / float64(target), counted, nil
}
