import { describe, expect, it } from "vitest";
import { dueInDays, dueNextMonth } from "../src/dates";

const day = (text: string) => new Date(`${text}T00:00:00Z`);

describe("dates", () => {
  it("is due 30 days later", () => {
    expect(dueInDays(day("2024-01-15"))).toEqual(day("2024-02-14"));
  });
  it("is due next month", () => {
    expect(dueNextMonth(day("2024-03-15"))).toEqual(day("2024-04-15"));
  });
  // Fails today: the 31st of January is due on the 3rd of March. A known bug,
  // not the migration's.
  it("is due at the end of a shorter month", () => {
    expect(dueNextMonth(day("2023-01-31"))).toEqual(day("2023-02-28"));
  });
});
