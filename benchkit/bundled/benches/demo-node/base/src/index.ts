export { Deadline } from "./clock";
export { fmtMoney, parseMoney, roundMoney } from "./compat";
export { dueInDays, dueNextMonth } from "./dates";
export { Invoice, LineItem } from "./invoice";
export { Money } from "./money";
export { cell, report, reportedTotal, sumOfReports } from "./report";
export { taxFor, taxOfEach, withTax } from "./tax";
