package crd_test

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/deploy/crd"
)

// admission is the API server's handling of a PodAutoscaler create, in
// process, from the CRD manifest of this directory: unknown fields pruned,
// defaults applied, then the strategy's validation (OpenAPI schema, list
// types, CEL rules), as the API server's custom resource handler does.
type admission struct {
	structural *structuralschema.Structural
	validate   func(u *unstructured.Unstructured) field.ErrorList
}

// newAdmission builds the admission of the CRD's only version.
func newAdmission(tb testing.TB) *admission {
	tb.Helper()
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crd.PodAutoscalers, &def); err != nil {
		tb.Fatalf("read the CRD: %v", err)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(
		def.Spec.Versions[0].Schema, internal, nil); err != nil {
		tb.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		tb.Fatal(err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		tb.Fatal(err)
	}
	statusSchema := internal.OpenAPIV3Schema.Properties["status"]
	statusValidator, _, err := apiservervalidation.NewSchemaValidator(&statusSchema)
	if err != nil {
		tb.Fatal(err)
	}
	gvk := v1alpha1.SchemeGroupVersion.WithKind(v1alpha1.Kind)
	strategy := customresource.NewStrategy(nil, true, gvk, validator, statusValidator, structural,
		&apiextensions.CustomResourceSubresourceStatus{}, nil, nil)
	return &admission{structural: structural, validate: func(u *unstructured.Unstructured) field.ErrorList {
		return strategy.Validate(context.Background(), u)
	}}
}

// admit prunes and defaults obj in place, as the API server does before it
// validates, and returns what validation refuses (empty: admitted).
func (a *admission) admit(obj map[string]any) field.ErrorList {
	pruning.Prune(obj, a.structural, true)
	structuraldefaulting.Default(obj, a.structural)
	return a.validate(&unstructured.Unstructured{Object: obj})
}
