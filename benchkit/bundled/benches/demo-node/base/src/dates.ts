/** The due date of an invoice issued on `issued`, `days` later. */
export function dueInDays(issued: Date, days = 30): Date {
  const due = new Date(issued);
  due.setUTCDate(due.getUTCDate() + days);
  return due;
}

/** The same day of the next month. */
export function dueNextMonth(issued: Date): Date {
  const due = new Date(issued);
  due.setUTCMonth(issued.getUTCMonth() + 1);
  return due;
}
