package sweeps

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// wandbCorpus is what becomes of each real W&B sweep of testdata/wandb/corpus: the
// options it is imported with, as its user would give them (-program for a sweep that
// runs a function of a script rather than naming it; -count, wandb agent's --count, for
// one without run_cap), and the error of one that does not import, a documented reason
// (docs/wandb.md, "Real sweeps").
var wandbCorpus = map[string]struct {
	program string
	count   int
	err     string
	invalid bool // W&B's own schema (wandb/sweeps' schema.json) refuses the sweep too
}{
	"25-111__ai4code__sweep.yaml":                                         {count: 20},
	"34-123hs__custom-llm__sweep.yaml":                                    {count: 20},
	"34-123hs__n-loop-MoE__sweep.yaml":                                    {count: 20},
	"4722794__translation__sweep.yaml":                                    {program: "main.py", count: 20},
	"AyushSharma173__AutogradGPT__sweep.yaml":                             {program: "modeling.py", count: 20},
	"BibiHajiraM__NLP_Final_Project__sweep.yaml":                          {count: 20},
	"Brandsma__semif-conlang-lora__configs__sweep.yaml":                   {count: 20},
	"EmanueleDeRossi1__Thesis-PEFT__sweep_config.yaml":                    {count: 20},
	"Erland366__transformers_playground__sweep_config.yaml":               {count: 20},
	"Girjoaba__apertus-finetuning-pipeline__configs__sweep.yaml":          {count: 20},
	"JasonP02__ScaleTraining__sweep_config.yaml":                          {},
	"JetBrains-Research__docs-fine-tuning__sweep_config.yaml":             {count: 20},
	"LihiShalmon__Attention_Under_Curriculum_Learning__sweep_config.yaml": {count: 20},
	// its program is a path in its author's home directory: a user gives their own copy
	"LoratadinePop__MetaPTBert__wandb_sweep.yaml":                                                       {program: "wandb_train.py"},
	"NicolasZucchet__Transformer-filters__sweep_config.yaml":                                            {},
	"OliverZim__nlp-research-template__sweep_config.yaml":                                               {},
	"Prasanna030__Plivo-NER__wandb_sweep.yaml":                                                          {count: 20},
	"gstrazds__twGPT__wandb_sweep.yaml":                                                                 {count: 20},
	"nomadicsynth__latent-refinement-transformer__sweeps__sweep.yaml":                                   {count: 20},
	"wendlerc__llm_labels__sweeps__sweep.yaml":                                                          {count: 20},
	"Resias__LLM_Diagnosis__sweep_config.yaml":                                                          {count: 20},
	"Gjorgji-Noveski__maze-grpo-fine-tune__sweep_config.yaml":                                           {},
	"AshwinSankar17__da6401_assignment3__sweep_config.yaml":                                             {count: 20},
	"ml4wireless__transformer-time-series-prediction__wandb_sweep.yaml":                                 {count: 20},
	"Luisibear98__mars-steg__sweeps__sweep.yaml":                                                        {},
	"HarshaRockzz__llm-fine-tune-lab__configs__sweep_config.yaml":                                       {program: "scripts/train.py", count: 20},
	"psandev__my-miniGPT__configs__sweep_config.yaml":                                                   {program: "training/train.py", count: 20},
	"nexon33__memory-transformer__configs__sweep_config.yaml":                                           {},
	"Jazhyc__intention-jailbreak__configs__sweep_config.yaml":                                           {},
	"ageorgiev97__arxiv-classifier-system__configs__sweep_config.yaml":                                  {count: 20},
	"boostcampaitech4nlp2__level1_semantictextsimilarity_nlp-level1-nlp-12__configs__sweep_config.yaml": {count: 20},
	"humdinger-g__unsupervised_translation__configs__sweep_config.yaml":                                 {},
	"rodneykeilson__ToxiScope__configs__sweep_config.yaml":                                              {},
	// ${interpreter} -m src.training.train runs a module: its file is the identity
	"boostcampaitech8__pro-nlp-mrc-nlp-01__configs__sweep_config.yaml": {count: 20},
	// python -m src.train, likewise
	"AIBootcamp13__upstageailab-nlp-summarization-nlp_9__sweep.yaml": {count: 20},
	// ${args_no_boolean_flags}: booleans as bare flags
	"OpenBioML__bio-chem-lm__sweeps__sweep.yaml": {count: 20},
	// max_runs is no key of a W&B sweep: W&B's own schema refuses the sweep
	"Englios__nano-t5-malaysian-dialect-MT__configs__sweep_config.yaml": {err: "line 11: max_runs = 5: not a key of a W&B sweep", invalid: true},
	// output_dir: /tmp/test-clm would put the program's output outside its run
	// directory, which docs/trainer.md refuses (and num_train_epochs has values: 3, not a
	// list, which W&B's own schema refuses)
	"AlekseyKorshuk__dalio-finetuner__sweep.yaml": {count: 20, err: `line 35: parameters.output_dir = "/tmp/test-clm": an absolute path`, invalid: true},
	// conditions: is no key of a W&B parameter (its schema allows no other keys): W&B
	// itself refuses the sweep
	"SaifPunjwani__pdp-gpt2-implementation__sweep_config.yaml": {count: 20, err: "line 31: parameters.bits.conditions = {quantize: true}: not a key of a W&B parameter", invalid: true},
}

// Each real sweep imports, as a program sweep where it names a program or is given one,
// and validates; or fails with its documented reason. At least 90% of them import.
func TestWandbCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "wandb", "corpus", "*.yaml"))
	if err != nil || len(files) < 20 {
		t.Fatalf("%d sweeps in the corpus (%v), want at least 20", len(files), err)
	}
	source := regexp.MustCompile(`^# source: https://github\.com/[^/\s]+/[^/\s]+/blob/[0-9a-f]{40}/\S+\n`)
	imported, programs, valid := 0, 0, 0
	var names []string
	for _, f := range files {
		name := filepath.Base(f)
		names = append(names, name)
		want, ok := wandbCorpus[name]
		if !ok {
			t.Errorf("%s: not in the table", name)
			continue
		}
		if !want.invalid {
			valid++
		}
		if want.invalid && want.err == "" {
			t.Errorf("%s: a sweep W&B refuses imports", name)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !source.Match(src) {
			t.Errorf("%s: the first line does not give its source", name)
		}
		out, _, err := ImportWandb(src, WandbOptions{Program: want.program, Count: want.count})
		switch {
		case want.err != "" && (err == nil || !strings.HasPrefix(err.Error(), want.err)):
			t.Errorf("%s: error %v, want the documented %q", name, err, want.err)
		case want.err == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want.err == "":
			imported++
			if strings.Contains(string(out), "\ntrainer:\n") {
				programs++
				var m programOut
				checkProgramManifest(t, out)
				if err := yaml.Unmarshal(out, &m); err != nil || m.Trainer.Name == "" || len(m.Parameters) == 0 {
					t.Errorf("%s: a program sweep without a trainer or parameters (%v):\n%s", name, err, out)
				}
			} else if _, err := Parse(out); err != nil {
				t.Errorf("%s: the manifest does not parse: %v", name, err)
			}
		}
	}
	for name := range wandbCorpus {
		if !slices.Contains(names, name) {
			t.Errorf("%s: in the table, not in the corpus", name)
		}
	}
	t.Logf("%d of %d real W&B sweeps import (%d as program sweeps); %d of the %d that W&B accepts", imported, len(files), programs, imported, valid)
	if imported*10 < len(files)*9 || len(files) < 20 {
		t.Errorf("%d of the %d sweeps import: want at least 90%% of at least 20", imported, len(files))
	}
}
