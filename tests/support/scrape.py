"""Read a Prometheus text exposition the way a scraper would."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    families: dict[str, str]  # family name -> type
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    @classmethod
    def parse(cls, text: str) -> Scrape:
        families: dict[str, str] = {}
        samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
        for fam in text_string_to_metric_families(text):
            families[fam.name] = fam.type
            for s in fam.samples:
                samples[(s.name, frozenset(s.labels.items()))] = float(s.value)
        return cls(families, samples)

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples.get((name, frozenset(labels.items())))

    def with_name(self, name: str) -> dict[frozenset[tuple[str, str]], float]:
        return {lab: v for (n, lab), v in self.samples.items() if n == name}
