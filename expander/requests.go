package expander

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

type requests struct{ cpu, mem int64 }

func podRequests(p *corev1.Pod) requests {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return requests{cpu: r.Cpu().MilliValue(), mem: r.Memory().Value()}
}
