"""Factual support: claims in hand-made answers checked against the item's passage, with the reason per claim."""

from __future__ import annotations

import json

import pytest

from gate.engines.types import Response
from gate.errors import InputError
from gate.score.scorers.support import FactualSupport
from gate.score.types import Item

PASSAGE = ("Returns are accepted within 30 days of delivery. Items must be unused and in their original packaging. "
           "Refunds go back to the original payment method within 5 business days of the return arriving.")


def item(passages=(PASSAGE,), where="extra"):
    extra = {"passages": list(passages)} if where == "extra" else {}
    expected = {"passages": list(passages)} if where == "expected" else {}
    return Item("kb-1", "returns", ({"role": "user", "content": "How long do I have?"},), expected, line=3,
                extra=extra)


def score(text, **opts):
    return FactualSupport(**opts).score(item(), Response(text=text))


@pytest.mark.parametrize("text,supported,rate,contradiction,why", [
    ("You can return items within 30 days of delivery.", 1, 1.0, 0, "1/1 claims supported"),
    ("Returns are accepted within 30 days. Refunds go back to the original payment method.", 1, 1.0, 0, "2/2"),
    # a changed figure is the commonest invented fact
    ("Returns are accepted within 60 days of delivery.", 0, 0.0, 0,
     "number(s) not in the aligned passage sentence: 60"),
    # the reverse of what the passage says
    ("Returns are not accepted within 30 days of delivery.", 0, 0.0, 1, "negation differs"),
    # one supported claim and one invented
    ("Returns are accepted within 30 days of delivery. We also offer free gift wrapping for every order.", 0, 0.5,
     0, "claim 2: covered"),
])
def test_claims(text, supported, rate, contradiction, why):
    s = score(text)
    assert (s.value["supported"], s.value["support_rate"], s.value["contradiction"]) == (supported, rate,
                                                                                        contradiction)
    assert why in s.explanation
    assert (s.error is None) == bool(supported)


def test_small_talk_is_skipped_and_nothing_checkable_is_not_support():
    assert score("Thanks! Returns are accepted within 30 days of delivery.").value["supported"] == 1.0
    s = score("Sure!")
    assert s.value["supported"] == 0.0 and s.error == "no_claims"


def test_inflections_match_and_threshold_matters():
    text = "Refunds are returned to the original payment method in 5 business days by the bank."
    assert score(text).value["supported"] == 1.0
    assert score(text, min_coverage=1.0).value["supported"] == 0.0


def test_answer_field_of_a_json_answer_and_passages_in_expected():
    ans = json.dumps({"reply": "Items must be unused and in their original packaging.", "ticket": "T-1"})
    s = FactualSupport(answer_field="reply").score(item(where="expected"), Response(text=ans))
    assert s.value["supported"] == 1.0


def test_explanations_mask_personal_data():
    s = score("Call 4111 1111 1111 1111 or mail jane.doe@example.com about returns within 30 days.")
    assert "1111 1111" not in s.explanation and "jane.doe@example.com" not in s.explanation


def test_engine_error_and_missing_passages():
    s = FactualSupport().score(item(), Response(text="", error="timeout"))
    assert s.value["supported"] == 0.0 and s.error == "engine_error"
    with pytest.raises(InputError) as ei:
        FactualSupport().validate_item(item(passages=()))
    assert ei.value.field == "passages" and ei.value.line == 3
    with pytest.raises(InputError):
        FactualSupport().validate_item(item(passages=(1, 2)))
    with pytest.raises(ValueError):
        FactualSupport(min_coverage=0)


# -- issue 16 item 13: errors the lexical scorer passed, and the perturbation suite ---------------------------------

@pytest.mark.parametrize("text,why", [
    # a figure taken from another sentence of the passage is still a changed fact
    ("Returns are accepted within 5 days of delivery.", "not in the aligned passage sentence: 5"),
    ("Refunds go back to the original payment method within 30 business days of the return arriving.",
     "not in the aligned passage sentence: 30"),
    ("Returns are rejected within 30 days of delivery.", "opposite meaning: 'rejected'"),
    ("Items must be used and in their original packaging.", "opposite meaning: 'used'"),
    ("Refunds go back to a different payment method within 5 business days of the return arriving.",
     "opposite meaning: 'different'"),
])
def test_changed_facts_are_caught(text, why):
    s = score(text)
    assert s.value["supported"] == 0.0 and why in s.explanation, s.explanation


def test_subject_and_object_swapped_and_names_by_role():
    passage = "The customer pays the courier when the parcel arrives. Tony paid Bobby 5 dollars on Monday."

    def check(text):
        return FactualSupport().score(item(passages=(passage,)), Response(text=text))
    for swapped in ("The courier pays the customer when the parcel arrives.", "Bobby paid Tony 5 dollars on Monday.",
                    "Maria paid Bobby 5 dollars on Monday."):
        assert check(swapped).value["supported"] == 0.0, swapped
    assert check("The courier pays the customer when the parcel arrives.").value["contradiction"] == 1.0
    # the same facts in the passive voice or with a fronted adverbial keep their roles
    for faithful in ("Bobby was paid 5 dollars by Tony on Monday.", "On Monday, Tony paid Bobby 5 dollars.",
                     "The courier is paid by the customer when the parcel arrives."):
        assert check(faithful).value["supported"] == 1.0, faithful


def test_bounds_are_not_negations():
    s = score("Returns are accepted never later than 30 days after delivery.")
    assert s.value["supported"] == 1.0 and s.value["contradiction"] == 0.0, s.explanation
    assert score("Returns are accepted no more than 30 days after delivery.").value["supported"] == 1.0


def test_two_figures_of_one_sentence_swapped():
    passage = "Tony can pick 6 quarts of strawberries per hour, while Bobby picks 4 quarts per hour."
    s = FactualSupport().score(item(passages=(passage,)),
                               Response(text="Tony can pick 4 quarts of strawberries per hour."))
    assert s.value["supported"] == 0.0 and "another part of the sentence" in s.explanation
    ok = FactualSupport().score(item(passages=(passage,)),
                                Response(text="Bobby picks four quarts per hour, while Tony can pick six."))
    assert ok.value["supported"] == 1.0, ok.explanation


def test_perturbation_suite_meets_the_targets():
    """>= 200 seeded pairs from GSM8K passages (public, MIT): >= 90 % of perturbations caught, >= 90 % of faithful
    paraphrases passed, per kind as well as overall (bench/support_perturbations.py writes the table)."""
    from bench.support_perturbations import KINDS, build_suite, evaluate

    suite = build_suite(seed=0)
    assert len(suite) >= 200 and build_suite(seed=0) == suite
    assert {c["kind"] for c in suite} == set(KINDS) and all(sum(c["kind"] == k for c in suite) >= 40 for k in KINDS)
    res = evaluate(suite, FactualSupport())
    assert res["caught"] >= 0.9 and res["passed"] >= 0.9, res["per_kind"]
    for k, c in res["per_kind"].items():
        assert c["right"] / c["n"] >= 0.85, (k, c)


def check(passage: str, claim: str) -> tuple[float, str]:
    s = FactualSupport().score(item((passage,)), Response(text=claim))
    return s.value["supported"], s.explanation


# issue 31: held-out Wikipedia-style passages, each example exactly as filed
@pytest.mark.parametrize("opener", ["Additionally", "Moreover", "Nevertheless", "Furthermore", "Importantly",
                                    "Specifically", "Typically"])
def test_sentence_opening_adverb_is_no_name(opener):
    assert check("The store opens at 9 am on weekdays.", f"{opener}, the store opens at 9 am on weekdays.")[0] == 1


@pytest.mark.parametrize("text", ["Pat O'Connell lives in Ventura.", "The abbey of Saint-Jean d'Aulps is old.",
                                  "D'Arcy was born in Sant'Eufemia."])
def test_apostrophe_names_support_themselves(text):
    assert check(text, text) == (1.0, "1/1 claims supported")


def test_apostrophe_name_changed_is_caught():
    assert check("Pat O'Connell lives in Ventura.", "Pat O'Brien lives in Ventura.")[0] == 0


def test_verbatim_sentence_with_a_negated_clause_is_supported():
    text = ("The most famous work of Norman art is the Bayeux Tapestry, which is not a tapestry but a work of "
            "embroidery.")
    assert check(text, text)[0] == 1


def test_sentence_split_before_symbol_led_name():
    from gate.score.scorers.support import sentences

    passage = ("Counting problems belong to the class #P. #P is not known to be contained in NP. ALL is the class of "
               "all decision problems.")
    assert sentences(passage)[1].startswith("#P is not")
    assert check(passage, "ALL is the class of all decision problems.")[0] == 1


@pytest.mark.parametrize("passage,claim", [
    ("The agreement was signed by the BBC in 2001.", "The agreement was signed by the ITV in 2001."),
    ("It is unknown whether P equals NP.", "It is unknown whether P equals BPP."),
    ("The BBC and ITV bid. The agreement was signed by the BBC in 2001.",
     "The agreement was signed by the ITV in 2001."),
])
def test_acronyms_are_entities(passage, claim):
    assert check(passage, claim)[0] == 0
    assert check(passage, passage.split(". ")[-1])[0] == 1


@pytest.mark.parametrize("passage,claim", [
    # a plural acronym and a mixed-case name are names too (technical text is full of them: SciTLDR's entity swaps)
    ("Convolutional neural networks (CNNs) become deeper every year.",
     "Convolutional neural networks (GNNs) become deeper every year."),
    ("We test the method on two domains: FiLM control and simulated driving.",
     "We test the method on two domains: ViZDoom control and simulated driving."),
    ("Seq2Seq models tend to select common words when they compose responses.",
     "Seq2Tree models tend to select common words when they compose responses."),
])
def test_plural_acronyms_and_mixed_case_names_are_entities(passage, claim):
    assert check(passage, claim)[0] == 0
    assert check(passage, passage)[0] == 1
    framed = "According to the passage, " + passage[0].lower() + passage[1:]
    assert check(passage, framed)[0] == 1


@pytest.mark.parametrize("claim", ["The fee is no more than 30 dollars.", "The fee is not greater than 30 dollars."])
def test_bound_rewrite_keeps_the_negation(claim):
    supported, why = check("The fee is more than 30 dollars.", claim)
    assert supported == 0 and "opposite meaning" in why
    assert check("The fee is no more than 30 dollars.", "The fee is at most 30 dollars, no more than 30.")[0] == 1


def test_unsupported_clause_of_common_words_fails():
    base = ("The city grew rapidly during the eighteenth century as its port handled more trade than any other "
            "harbour on the coast")
    assert check(base + ".", base + ".")[0] == 1
    supported, why = check(base + ".", base + ", largely because of pressure from merchants.")
    assert supported == 0 and "a clause is not in the passage" in why


def test_moved_fronted_date_is_the_same_fact():
    passage = "In November 2006, the council elections were held under a new system."
    assert check(passage, "The council elections were held under a new system in November 2006.")[0] == 1
    assert check(passage, "The council elections were held under a new system in November 2007.")[0] == 0


def test_plain_noun_subject_object_swap_is_a_contradiction():
    passage = "The knights exported horses to the neighbouring kingdoms."
    s = FactualSupport().score(item((passage,)), Response(text="The horses exported knights to the neighbouring "
                                                                "kingdoms."))
    assert s.value["supported"] == 0 and s.value["contradiction"] == 1 and "swap roles" in s.explanation
    assert check(passage, "Horses were exported by the knights to the neighbouring kingdoms.")[0] == 1


def test_may_the_month_is_a_name():
    passage = "The old bridge closed in October 1990. Construction of the new one started in May 1999."
    supported, why = check(passage, "Construction of the new one started in October 1999.")
    assert supported == 0 and "may" in why
    assert check(passage, "Construction of the new one started in May 1999.")[0] == 1
    assert check("May 1999 was wet. Visitors may park here.", "Visitors may park here.")[0] == 1


@pytest.mark.parametrize("passage,claim", [
    ("The river forms the northern border of the county.", "The river forms the southern border of the county."),
    ("The western wall of the fort was rebuilt in 1820.", "The eastern wall of the fort was rebuilt in 1820."),
    ("It served as a major port for the whole region.", "It served as a minor port for the whole region."),
    ("Floods often hit the valley in spring.", "Floods rarely hit the valley in spring."),
    ("The war began in 1914 after the assassination.", "The war ended in 1914 after the assassination."),
    ("The bird is common in the northern forests.", "The bird is rare in the northern forests."),
])
def test_wordnet_antonyms_are_contradictions(passage, claim):
    """Issue 31 item 8: opposites from Princeton WordNet 3.0 (shipped extract), direct and indirect, inflected."""
    s = FactualSupport().score(item((passage,)), Response(text=claim))
    assert s.value["supported"] == 0 and s.value["contradiction"] == 1 and "opposite meaning" in s.explanation
    assert check(passage, passage)[0] == 1


def test_wordnet_extract_ships_with_its_licence():
    from gate.score.scorers.support import _LEXICON, wordnet_opposites

    head = _LEXICON.read_text(encoding="utf-8")[:3000]
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in head
    ant, irregular = wordnet_opposites()
    assert "southern" in ant["northern"] and irregular["began"] == "begin"
    assert "on" not in ant.get("off", ()) and "off" not in ant  # stop words never oppose


def test_clause_initial_adverb_alone_is_no_name_and_no_fact():
    """Held-out SciTLDR (bench/support_heldout.py): a sentence-opening adverb split off as its own clause was read as
    a name ("Empirically") or aligned with a negated clause ("Importantly")."""
    passage = ("Improved accuracies can be obtained on multiple datasets. Empirically, we demonstrate the potential "
               "to deploy training in hardware systems.")
    assert check(passage, "Improved accuracies can be obtained on multiple datasets; Empirically, we demonstrate "
                          "the potential to deploy training in hardware systems.")[0] == 1
    passage = "The presented approach does not rely on prior knowledge of the number of clusters."
    assert check(passage, "Importantly, the presented approach does not rely on prior knowledge of the number of "
                          "clusters.")[0] == 1


@pytest.mark.parametrize("frame", ["The abstract states that ", "The authors report that ",
                                   "According to the paper, "])
def test_reporting_frames_of_papers(frame):
    passage = "However, when tested on unseen maps, the algorithm follows walls to find the goal."
    assert check(passage, frame + "however, when tested on unseen maps, the algorithm follows walls to find the "
                                  "goal.")[0] == 1


def test_acronym_with_digits_supports_itself():
    text = "We model text on LM1B and images on CIFAR-10 and ImageNet."
    assert check(text, text)[0] == 1


def test_claim_joining_two_sentences_is_aligned_with_both():
    """Held-out SciTLDR: the single sentence covering 70 % won over the pair the answer joined, and the first half
    of the claim was checked against clauses of the wrong sentence ("'convolution' where the passage says 'cnn'")."""
    passage = ("We call our new method the Conic Convolution and DFT Network. We evaluated the efficacy of the "
               "network as compared to a standard CNN for several different image classification tasks and "
               "demonstrated improved performance, including classification accuracy and computational efficiency.")
    claim = ("We call our new method the Conic Convolution and DFT Network; We evaluated the efficacy of the network "
             "as compared to a standard CNN for several different image classification tasks and demonstrated "
             "improved performance, including classification accuracy and computational efficiency.")
    assert check(passage, claim)[0] == 1


@pytest.mark.parametrize("passage,claim,new,old", [
    # opposites no lexicon of gate's lists (EACL 2017 pairs outside WordNet's antonymy; held-out SciTLDR claims)
    ("Our method is trained to maximize expected squared jumped distance, a proxy for mixing speed.",
     "Our method is trained to maximize expected squared jumped nearness, a proxy for mixing speed.",
     "nearness", "distance"),
    ("This adjustment makes it possible to retrain the pruned Winograd-domain network.",
     "This adjustment makes it possible to retrain the pruned Winograd-codomain network.", "codomain", "domain"),
    ("In this work, we identify two problems regarding the direction of the weight updates.",
     "In this malfunction, we identify two problems regarding the direction of the weight updates.",
     "malfunction", "work"),
    # a stop word replaced by a content word the passage never uses
    ("Existing methods represent all weights with the same precision.",
     "Existing methods represent all weights with the divergent precision.", "divergent", "same"),
    # any invented word in place of the passage's
    ("A neural network approximates the model's posterior on latent variables.",
     "A neural network approximates the view's posterior on latent variables.", "view", "model"),
])
def test_a_word_the_passage_never_uses_in_place_of_its_word_is_unsupported(passage, claim, new, old):
    """Held-out SciTLDR with EACL 2017 antonyms (bench/support_heldout.py): a claim that puts a word the passage
    never uses where the passage has another word passed while word coverage stayed above `min_coverage` (62
    opposites outside the shipped lexicon, 2 caught)."""
    s = FactualSupport().score(item((passage,)), Response(text=claim))
    assert s.value["supported"] == 0, s.explanation
    assert f"'{new}' where the passage says '{old}'" in s.explanation
    assert check(passage, passage)[0] == 1


@pytest.mark.parametrize("passage,claim", [
    # WordNet synonyms in place of the passage's word
    ("The two firms bought the network.", "The two firms purchased the network."),
    ("The shop opens at 9 am on weekdays.", "The store opens at 9 am on weekdays."),
    ("The shipment weighed about 40 kilos in all.", "The shipment weighed about 40 kilograms in all."),
    ("The talks will begin on Monday in Geneva.", "The talks will start on Monday in Geneva."),
    # another form of the same word, regular or irregular
    ("The minister said the talks would resume.", "The minister says the talks would resume."),
    ("The ship broke apart near the coast.", "The ship break apart near the coast."),
    # a closed-class word in place of another
    ("Each member of the board voted for the plan.", "Every member of the board voted for the plan."),
    # a rewording that changes more than the one word is not a copy with one word changed (MRPC pairs)
    ("Several current and former ferry officers have said the rules were routinely ignored and seldom enforced.",
     "Some current and former ferry employees have said those rules were often ignored."),
    # a word the passage uses elsewhere is not an invented one
    ("The model is trained on images. The view of the encoder is fixed.",
     "The view is trained on images."),
])
def test_synonyms_and_forms_in_place_of_a_word_stay_supported(passage, claim):
    """The price of the rule above, kept small (bench/results/support_paraphrase.md): a WordNet synonym, another form
    of the word, a closed-class word, a word the passage uses elsewhere, or a clause reworded in more places than
    the one word is no copy with an invented word."""
    assert check(passage, claim)[0] == 1, check(passage, claim)


def test_wordnet_synonym_extract_ships_with_its_licence():
    from gate.score.scorers.support import _SYNSETS, wordnet_synonyms

    assert "WordNet 3.0 Copyright 2006 by Princeton University" in _SYNSETS.read_text(encoding="utf-8")[:3000]
    sets, irregular = wordnet_synonyms()
    assert sets["shop"] & sets["store"] and sets["kilo"] & sets["kilogram"] and not sets["model"] & sets["view"]
    assert irregular["said"] == "say" and irregular["broke"] == "break"


def test_two_words_that_trade_places_are_swapped_roles():
    """Held-out SciTLDR role swaps (85.5 % caught): two plain nouns exchanged when one of them occurs twice, or
    without a determiner, passed; the clause is the passage's with two words trading places and nothing else."""
    passage = ("Experimental results show that our methods can find catastrophic failures and estimate failures rates "
               "of agents multiple orders of magnitude faster than standard evaluation schemes.")
    claim = ("Experimental results show that our failures can find catastrophic methods and estimate failures rates "
             "of agents multiple orders of magnitude faster than standard evaluation schemes.")
    s = FactualSupport().score(item((passage,)), Response(text=claim))
    assert s.value["supported"] == 0 and s.value["contradiction"] == 1 and "swap roles" in s.explanation
    passage = "Deep learning has achieved remarkable successes in solving challenging problems."
    assert check(passage, "Deep successes has achieved remarkable learning in solving challenging problems.")[0] == 0
    # items of a coordination trade places freely
    passage = "Both quantitative and qualitative evaluations demonstrate the effectiveness of the method."
    assert check(passage, "Both qualitative and quantitative evaluations demonstrate the effectiveness of the "
                          "method.")[0] == 1


@pytest.mark.parametrize("tail", [", at each step.", ", in this paper.", ", for a label.", ", in the afternoon.",
                                  ", a felony."])
def test_an_appended_phrase_of_one_new_word_is_unsupported(tail):
    """Held-out SciTLDR added clauses (81.2 % caught): a phrase of one content word appended to a copied sentence
    was under the two-word floor of the clause rule. On MRPC's paraphrases it fires on 9 of 7,800 claims, 7 of them
    rightly (bench/results/support_paraphrase.md)."""
    passage = "We study the problem of learning representations of entities and relations in knowledge graphs."
    claim = passage.rstrip(".") + tail
    supported, why = check(passage, claim)
    assert supported == 0 and "an added phrase the passage does not hold" in why, why


@pytest.mark.parametrize("claim", [
    "In response, Medina said the accusation is untrue and offensive.",  # an opening frame
    "Medina said the accusation is untrue and offensive, he added.",  # a reporting clause
    "Medina said the accusation is untrue and offensive, in fact.",  # a discourse marker
    "Medina said the accusation is untrue and offensive, however.",
    "Medina said the accusation is untrue and offensive, unsurprisingly.",  # a comment adverb
    "Medina said the accusation is untrue and offensive, etc.",  # a closed-class word
])
def test_frames_and_markers_are_no_added_phrase(claim):
    passage = "Medina said the accusation is untrue and offensive."
    assert check(passage, claim)[0] == 1, check(passage, claim)


@pytest.mark.parametrize("passage,claim", [
    ("It outperforms the current state of the art model on 12 out of the 13 question types.",
     "It outperforms the current state of the art model on 13 out of the 13 question types."),
    ("One typically resorts to small values such as 0.9 or 0.5.", "One typically resorts to small values such as "
                                                                  "0.5 or 0.5."),
    ("We evaluate our algorithm on 26 games of the Atari 2600 Environment.",
     "We evaluate our algorithm on 2600 games of the Atari 2600 Environment."),
])
def test_a_figure_moved_onto_another_figure_of_the_sentence_is_unsupported(passage, claim):
    """Held-out SciTLDR number swaps (75 % caught on seed 1): a figure replaced by another figure of the same
    sentence left every figure of the claim in the passage; the passage's own figure is gone and the other one is
    written once more than the passage writes it."""
    supported, why = check(passage, claim)
    assert supported == 0 and "where the passage sentence says" in why, why
    assert check(passage, passage)[0] == 1
    # a claim that keeps one of the two figures and drops the other is a partial restatement, not a changed figure
    assert check("Prices rose 5 percent in May and 7 percent in June.", "Prices rose 5 percent in May.")[0] == 1
