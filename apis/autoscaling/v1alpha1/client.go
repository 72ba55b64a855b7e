package v1alpha1

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Scheme knows the PodAutoscaler types (and the meta/v1 options used in
// requests for them).
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

var parameterCodec = runtime.NewParameterCodec(Scheme)

// Client is a small typed client for PodAutoscalers.
//
// +kubebuilder:object:generate=false
type Client struct {
	rest rest.Interface
}

// NewForConfig returns a client for the API server cfg points at.
func NewForConfig(cfg *rest.Config) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(Scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("%s client: %w", GroupName, err)
	}
	return &Client{rest: rc}, nil
}

// PodAutoscalers returns the operations on one namespace's PodAutoscalers
// ("" for every namespace, for List and Watch).
func (c *Client) PodAutoscalers(namespace string) *PodAutoscalers {
	return &PodAutoscalers{rest: c.rest, ns: namespace}
}

// PodAutoscalers are the operations on the PodAutoscalers of a namespace.
//
// +kubebuilder:object:generate=false
type PodAutoscalers struct {
	rest rest.Interface
	ns   string
}

// Get reads one PodAutoscaler.
func (p *PodAutoscalers) Get(ctx context.Context, name string, opts metav1.GetOptions) (*PodAutoscaler, error) {
	out := &PodAutoscaler{}
	err := p.rest.Get().Namespace(p.ns).Resource(Resource).Name(name).
		VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

// List lists PodAutoscalers.
func (p *PodAutoscalers) List(ctx context.Context, opts metav1.ListOptions) (*PodAutoscalerList, error) {
	out := &PodAutoscalerList{}
	req := p.rest.Get().Namespace(p.ns).Resource(Resource).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	err := req.Do(ctx).Into(out)
	return out, err
}

// Watch watches PodAutoscalers.
func (p *PodAutoscalers) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req := p.rest.Get().Namespace(p.ns).Resource(Resource).VersionedParams(&opts, parameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
	}
	return req.Watch(ctx)
}

// Create creates a PodAutoscaler.
func (p *PodAutoscalers) Create(ctx context.Context, pa *PodAutoscaler, opts metav1.CreateOptions) (*PodAutoscaler, error) {
	out := &PodAutoscaler{}
	err := p.rest.Post().Namespace(p.ns).Resource(Resource).
		VersionedParams(&opts, parameterCodec).Body(pa).Do(ctx).Into(out)
	return out, err
}

// Update replaces a PodAutoscaler (its status is ignored).
func (p *PodAutoscalers) Update(ctx context.Context, pa *PodAutoscaler, opts metav1.UpdateOptions) (*PodAutoscaler, error) {
	out := &PodAutoscaler{}
	err := p.rest.Put().Namespace(p.ns).Resource(Resource).Name(pa.Name).
		VersionedParams(&opts, parameterCodec).Body(pa).Do(ctx).Into(out)
	return out, err
}

// UpdateStatus replaces a PodAutoscaler's status.
func (p *PodAutoscalers) UpdateStatus(ctx context.Context, pa *PodAutoscaler, opts metav1.UpdateOptions) (*PodAutoscaler, error) {
	out := &PodAutoscaler{}
	err := p.rest.Put().Namespace(p.ns).Resource(Resource).Name(pa.Name).SubResource("status").
		VersionedParams(&opts, parameterCodec).Body(pa).Do(ctx).Into(out)
	return out, err
}

// Delete deletes a PodAutoscaler.
func (p *PodAutoscalers) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return p.rest.Delete().Namespace(p.ns).Resource(Resource).Name(name).Body(&opts).Do(ctx).Error()
}
