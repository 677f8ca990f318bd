package v1alpha1

// SetDefaults_APIResourceSchemaSpec validates names of the resource as CRDs
// do unless told otherwise.
func SetDefaults_APIResourceSchemaSpec(obj *APIResourceSchemaSpec) {
	if obj.NameValidation == "" {
		obj.NameValidation = NameValidationDNS1123Subdomain
	}
}
