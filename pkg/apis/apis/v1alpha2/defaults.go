package v1alpha2

// SetDefaults_ResourceSchema stores a resource like a custom resource
// unless it says otherwise.
func SetDefaults_ResourceSchema(obj *ResourceSchema) {
	if obj.Storage.CRD == nil && obj.Storage.Virtual == nil {
		obj.Storage.CRD = &ResourceSchemaStorageCRD{}
	}
}

// DefaultIdentitySecretRef is the identity secret of an export that names
// none: the secret named like the export in namespace kcp-system.
func DefaultIdentitySecretRef(exportName string) *SecretReference {
	return &SecretReference{Namespace: DefaultIdentitySecretNamespace, Name: exportName}
}

// SetDefaultIdentity points an export without an identity secret at its
// default one.
func SetDefaultIdentity(export *APIExport) {
	if export.Spec.Identity == nil {
		export.Spec.Identity = &Identity{}
	}
	if export.Spec.Identity.SecretRef == nil {
		export.Spec.Identity.SecretRef = DefaultIdentitySecretRef(export.Name)
	}
}
