/** An amount of money in cents, with its currency. */
export class Money {
  private constructor(
    readonly cents: number,
    readonly currency: string,
  ) {}

  static of(amount: number, currency = "USD"): Money {
    return new Money(amount * 100, currency);
  }

  round(): Money {
    return new Money(Math.round(this.cents + Number.EPSILON), this.currency);
  }

  plus(other: Money): Money {
    if (other.currency !== this.currency) {
      throw new Error(`${this.currency} and ${other.currency} do not add`);
    }
    return new Money(this.cents + other.cents, this.currency);
  }

  toNumber(): number {
    return this.cents / 100;
  }

  format(): string {
    return `${this.round().toNumber().toFixed(2)} ${this.currency}`;
  }
}
