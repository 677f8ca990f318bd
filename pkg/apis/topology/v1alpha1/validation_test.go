package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The selectors kcp's TestPartitionSetAdmission has refused.
func TestValidatePartitionSetRefusesInvalidSelectors(t *testing.T) {
	for name, sel := range map[string]*metav1.LabelSelector{
		"key too long in matchExpressions": {MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region/1234567890123456789012345678901234567890123456789012345678901234567890", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"antartica", "greenland"},
		}}},
		"value starting with _": {MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"antartica", "_A.123456789012345678901234567890123456789012345678901234567890"},
		}}},
		"values with DoesNotExist": {MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region", Operator: metav1.LabelSelectorOpDoesNotExist, Values: []string{"antartica", "greenland"},
		}}},
		"invalid key in matchLabels":   {MatchLabels: map[string]string{"1234567890123456789_01234567890123456789/aaa": "keynotvalid"}},
		"invalid value in matchLabels": {MatchLabels: map[string]string{"valuenotvalid": "1234567890123456789%%%01234567890123456789"}},
	} {
		ps := &PartitionSet{ObjectMeta: metav1.ObjectMeta{Name: "ps"}, Spec: PartitionSetSpec{Dimensions: []string{"region"}, ShardSelector: sel}}
		if errs := ValidatePartitionSet(ps); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := &PartitionSet{ObjectMeta: metav1.ObjectMeta{Name: "ps"}, Spec: PartitionSetSpec{Dimensions: []string{"region"}, ShardSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "excluded", Operator: metav1.LabelSelectorOpDoesNotExist}},
	}}}
	if errs := ValidatePartitionSet(ok); len(errs) != 0 {
		t.Errorf("valid PartitionSet refused: %v", errs)
	}
	if errs := ValidatePartitionSet(&PartitionSet{ObjectMeta: metav1.ObjectMeta{Name: "ps"}, Spec: PartitionSetSpec{Dimensions: []string{"not a key"}}}); len(errs) == 0 {
		t.Error("a dimension that is no label key is accepted")
	}
}
