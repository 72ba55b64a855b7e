package hpa

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcehelpers "k8s.io/component-helpers/resource"
)

// Requests returns each pod's request for resource in milli-units, index-
// aligned with pods, as the HPA computes it for Utilization targets:
//
//   - with a container name: that container's request (regular or sidecar);
//   - else, when the pod sets pod-level requests (spec.resources.requests,
//     PodLevelResources feature, on by default in v1.36): the pod's effective
//     request as the scheduler computes it, including overhead;
//   - else the sum over all containers plus sidecar init containers
//     (restartPolicy Always).
//
// Every pod must have a request, ignored pods included; a missing one is an
// error.
func Requests(pods []*v1.Pod, container string, resource v1.ResourceName) ([]int64, error) {
	out := make([]int64, len(pods))
	for i, pod := range pods {
		r, err := podRequest(pod, container, resource)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// podRequest returns one pod's request for resource.
func podRequest(pod *v1.Pod, container string, resource v1.ResourceName) (int64, error) {
	if container == "" && resourcehelpers.IsPodLevelRequestsSet(pod) {
		return podLevelRequest(pod, resource)
	}
	return containerRequests(pod, container, resource)
}

// podLevelRequest returns the pod-level effective request.
func podLevelRequest(pod *v1.Pod, resource v1.ResourceName) (int64, error) {
	reqs := resourcehelpers.PodRequests(pod, resourcehelpers.PodResourcesOptions{})
	q, ok := reqs[resource]
	if !ok {
		return 0, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, pod.Name)
	}
	return q.MilliValue(), nil
}

// containerRequests sums the requests of the pod's containers and sidecars,
// or returns the named container's request.
func containerRequests(pod *v1.Pod, container string, resource v1.ResourceName) (int64, error) {
	var total int64
	visit := func(c *v1.Container) (done bool, err error) {
		if container != "" && container != c.Name {
			return false, nil
		}
		q, ok := c.Resources.Requests[resource]
		if !ok {
			return false, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.Name)
		}
		total += q.MilliValue()
		return container != "", nil
	}
	for i := range pod.Spec.Containers {
		if done, err := visit(&pod.Spec.Containers[i]); done || err != nil {
			return total, err
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !isSidecar(c) {
			continue
		}
		if done, err := visit(c); done || err != nil {
			return total, err
		}
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
	}
	return total, nil
}

// isSidecar reports whether an init container keeps running (restartPolicy Always).
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}
