import { fmtMoney, roundMoney } from "./compat";
import { taxFor } from "./tax";

export class LineItem {
  constructor(
    readonly description: string,
    readonly quantity: number,
    readonly unitPrice: number,
  ) {}

  subtotal(): number {
    return roundMoney(this.quantity * this.unitPrice);
  }

  describe(currency = "USD"): string {
    const price = fmtMoney(this.unitPrice, currency);
    return `${this.quantity} x ${this.description} @ ${price}`;
  }
}

export class Invoice {
  readonly items: LineItem[] = [];

  constructor(
    readonly region: string,
    readonly currency = "USD",
  ) {}

  add(item: LineItem): void {
    this.items.push(item);
  }

  subtotal(): number {
    return roundMoney(this.items.reduce((sum, item) => sum + item.subtotal(), 0));
  }

  tax(): number {
    return taxFor(this.subtotal(), this.region);
  }

  total(): number {
    return roundMoney(this.subtotal() + this.tax());
  }

  totalText(): string {
    return fmtMoney(this.total(), this.currency);
  }
}
