import type { Timestamp } from '#lib/time.ts';

export interface Deal {
  uuid: string;
  name: string;
  amount: number;
  currency: string;
  status: 'open';
  probability: number;
  pipeline: { id: number; name: string };
  stage: { id: number; name: string; color: string };
  contact: { id: number; uuid: string; fullName: string; email: string };
  expectedCloseDate: string | null;
  contactPhone: string | null;
  createdAt: Timestamp;
}
