"""Regenerate seeds/patients.csv: 300 synthetic patients, the same every time (a fixed random seed).

    python examples/dbt/make_patients.py

Nobody in it is real. Ages skew towards the middle, a few ZIP codes hold most patients (so small towns
stand out, as in real data), and the diagnosis is drawn independently of the rest.
"""
import csv
import random
from pathlib import Path

ROWS = 300
ZIPS = ["02138", "02139", "02140", "02141", "02142", "02143", "01002", "01003"]
ZIP_WEIGHTS = [30, 25, 15, 10, 8, 6, 4, 2]
DIAGNOSES = ["asthma", "diabetes", "flu", "hypertension", "migraine", "none"]


def main() -> None:
    rng = random.Random(20240517)
    path = Path(__file__).resolve().parent / "seeds" / "patients.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["patient_id", "age", "zip", "sex", "diagnosis"])
        for n in range(1, ROWS + 1):
            age = min(95, max(18, round(rng.gauss(48, 17))))
            writer.writerow([f"P{n:04d}", age, rng.choices(ZIPS, ZIP_WEIGHTS)[0], rng.choice("FM"),
                             rng.choice(DIAGNOSES)])


if __name__ == "__main__":
    main()
