package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateConditions(t *testing.T) {
	tests := []struct {
		name       string
		conds      Conditions
		wantFields []string
	}{
		{name: "empty"},
		{
			name: "valid",
			conds: Conditions{
				{Type: "Ready", Status: corev1.ConditionTrue},
				{Type: "Scheduled", Status: corev1.ConditionFalse, Severity: ConditionSeverityError, Reason: "NoShard"},
			},
		},
		{
			name:       "missing type",
			conds:      Conditions{{Status: corev1.ConditionTrue}},
			wantFields: []string{"conditions[0].type"},
		},
		{
			name:       "duplicate type",
			conds:      Conditions{{Type: "Ready", Status: corev1.ConditionTrue}, {Type: "Ready", Status: corev1.ConditionFalse}},
			wantFields: []string{"conditions[1].type"},
		},
		{
			name:       "unknown status and severity",
			conds:      Conditions{{Type: "Ready", Status: "Maybe", Severity: "Fatal"}},
			wantFields: []string{"conditions[0].status", "conditions[0].severity"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateConditions(tt.conds, field.NewPath("conditions"))
			var got []string
			for _, err := range errs {
				got = append(got, err.Field)
			}
			if len(got) != len(tt.wantFields) {
				t.Fatalf("want errors on %v, got %v", tt.wantFields, errs)
			}
			for i := range got {
				if got[i] != tt.wantFields[i] {
					t.Errorf("want errors on %v, got %v", tt.wantFields, errs)
				}
			}
		})
	}
}
